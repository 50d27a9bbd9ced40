"""The mixed-concurrency replay acts only on a real collapse: below plain decoding by more than two runs' typical
noise turns speculation off (plain decoding is served), above plain decoding but below 80 % of what the
per-concurrency measurements promised fails the tune."""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import Any

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


def replayed(tmp_path: Path, spread: float, got: float, base: float = 100.0) -> Any:
    """Plain decoding at 100 and K = 1 at 120 tokens/s, each run moving by `spread`; the replay measures `got`
    against a plain-decoding baseline of `base`. Returns the tune's outcome."""
    setup = TuneSetup("p", "eagle3", True, (1,), (1,), repeats=2)
    strategy = Measured(setup)
    run = {"output_token_throughput": 1.0, "output_token_throughput_per_user": 1.0}
    strategy.book.add(
        [
            Measurement(Request("e2e", 1, k, r), slowed(run, tps * (1 + sign * spread)))
            for k, tps in ((0, 100.0), (1, 120.0))
            for r, sign in enumerate((-1, 1))
        ]
    )
    assert strategy.decisions()[1].k == 1

    def measure(req: Request) -> dict[str, float]:
        assert req.kind == "mixed"
        return {"output_token_throughput": got, "plain_output_token_throughput": base, "cost_s": 1.0}

    return finish(strategy, Recorder(measure, Checkpoint(tmp_path / "ck.jsonl", "h")))


@pytest.mark.parametrize(
    ("spread", "got", "below_plain"),
    [
        (0.05, 97.0, False),  # runs move by 5 %: 3 % below plain is noise
        (0.05, 85.0, True),  # 15 % below plain is not
        (0.002, 97.0, True),  # a quiet machine (a GPU): 3 % below plain is a real loss
        (0.002, 90.0, True),
    ],
)
def test_a_schedule_replayed_below_plain_decoding_turns_speculation_off(
    tmp_path: Path, spread: float, got: float, below_plain: bool
) -> None:
    out = replayed(tmp_path, spread, got)
    assert not out.problems and out.schedule["speculation"] != below_plain and out.mixed["collapse"] == below_plain
    if below_plain:
        assert out.mixed["fallback"] == "speculation off" and "below plain decoding" in out.schedule["notes"][0]


def test_a_replay_above_plain_but_far_below_its_promise_fails_the_tune(tmp_path: Path) -> None:
    """K = 1 measured 120 alone; replayed at 90 against a plain decoding of 80 under the same load: faster than
    plain, yet 25 % short of what the points promised, so something the points did not see is wrong."""
    out = replayed(tmp_path, 0.002, 90.0, base=80.0)
    assert out.schedule["speculation"]
    assert any("collapses under mixed concurrency" in p for p in out.problems)


def test_a_clamped_point_promises_what_its_emitted_k_measured() -> None:
    """The collapse check compares the replay with what the schedule as emitted promised: a clamp to K = 1 (or
    to plain decoding) promises that K's measurement, not the faster K the tune chose."""
    from specdeploy.tune.book import Decision
    from specdeploy.tune.engine import promise

    d = Decision(16, 6, 900.0, 500.0, "best", candidates={1: {"median": 600.0}, 6: {"median": 900.0}})
    assert (promise(d, 6), promise(d, 1), promise(d, 0)) == (900.0, 600.0, 500.0)
