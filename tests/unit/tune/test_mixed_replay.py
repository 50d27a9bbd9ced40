"""The mixed-concurrency replay fails a tune only on a real collapse: below plain decoding by more than two runs'
typical noise, or below 80 % of what the per-concurrency measurements promised."""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path

import pytest

from specdeploy.tune.checkpoint import Checkpoint, Recorder
from specdeploy.tune.engine import finish
from specdeploy.tune.search import Batch, Results, Strategy
from specdeploy.tune.setup import TuneSetup
from specdeploy.tune.types import Measurement, Request
from tests.helpers import slowed


class Measured(Strategy):
    """A strategy whose e2e book is filled by the test."""

    name = "measured"

    def plan(self) -> Generator[Batch, Results, None]:
        return
        yield []


def replayed(tmp_path: Path, spread: float, got: float) -> list[str]:
    """Plain decoding at 100 and K = 1 at 120 tokens/s, each run moving by `spread`; the replay measures `got`
    against a plain-decoding baseline of 100. Returns the tune's problems."""
    setup = TuneSetup("p", "eagle3", True, (1,), (1,), repeats=2)
    strategy = Measured(setup)
    run = {"output_token_throughput": 1.0, "output_token_throughput_per_user": 1.0}
    strategy.book.add([Measurement(Request("e2e", 1, k, r), slowed(run, tps * (1 + sign * spread)))
                       for k, tps in ((0, 100.0), (1, 120.0)) for r, sign in enumerate((-1, 1))])
    assert strategy.decisions()[1].k == 1

    def measure(req: Request) -> dict[str, float]:
        assert req.kind == "mixed"
        return {"output_token_throughput": got, "plain_output_token_throughput": 100.0, "cost_s": 1.0}

    return finish(strategy, Recorder(measure, Checkpoint(tmp_path / "ck.jsonl", "h"))).problems


@pytest.mark.parametrize(("spread", "got", "collapses"), [
    (0.05, 97.0, False),  # runs move by 5 %: 3 % below plain is noise
    (0.05, 85.0, True),  # 15 % below plain is not
    (0.002, 97.0, True),  # a quiet machine (a GPU): 3 % below plain is a real loss
    (0.002, 90.0, True),
])
def test_a_collapse_is_beyond_noise(tmp_path: Path, spread: float, got: float, collapses: bool) -> None:
    problems = replayed(tmp_path, spread, got)
    assert any("collapses under mixed concurrency" in p for p in problems) == collapses


def test_a_clamped_point_promises_what_its_emitted_k_measured() -> None:
    """The collapse check compares the replay with what the schedule as emitted promised: a clamp to K = 1 (or
    to plain decoding) promises that K's measurement, not the faster K the tune chose."""
    from specdeploy.tune.book import Decision
    from specdeploy.tune.engine import promise

    d = Decision(16, 6, 900.0, 500.0, "best", candidates={1: {"median": 600.0}, 6: {"median": 900.0}})
    assert (promise(d, 6), promise(d, 1), promise(d, 0)) == (900.0, 600.0, 500.0)
