"""Strategies on the recorded JSONL fixture: what they ask for, what they choose, what they cost."""

from __future__ import annotations

from pathlib import Path

from specdeploy.tune.checkpoint import Checkpoint, Recorder
from specdeploy.tune.engine import drive, replay_estimate, spent
from specdeploy.tune.strategies import STRATEGIES, coarse_to_fine


def run(name: str, setup, prior, replay, tmp_path: Path, budget=None):  # noqa: ANN001, ANN201
    strategy = STRATEGIES[name](setup, prior)
    rec = Recorder(replay, Checkpoint(tmp_path / f"{name}.jsonl", "h"))
    stopped = drive(strategy, rec, budget_s=budget)
    return strategy, rec, stopped


def oracle(replay, setup) -> dict[int, int]:  # noqa: ANN001
    """Best K per concurrency by the median of all six recorded repeats."""
    import statistics

    med = {
        (c, k): statistics.median(replay.rows[f"e2e/c{c}/k{k}/r{r}"]["values"]["system_tps"] for r in range(6))
        for c in setup.concurrency
        for k in (0, *setup.draft_lens)
    }
    return {c: max((0, *setup.draft_lens), key=lambda k: med[(c, k)]) for c in setup.concurrency}, med


def test_factorized_measures_acceptance_once_and_confirms_few(setup, prior, replay, tmp_path: Path) -> None:
    strategy, rec, _ = run("factorized", setup, prior, replay, tmp_path)
    kinds = [r.kind for r in replay.calls]
    assert kinds.count("acceptance") == 1 and replay.calls[0].k == 6  # one run at K_max (chain drafter)
    e2e_points = {(r.concurrency, r.k) for r in replay.calls if r.kind == "e2e"}
    assert len(e2e_points) <= 2 * len(setup.concurrency)  # not a sweep: 28 points exist
    best, med = oracle(replay, setup)
    for c, d in strategy.decisions().items():
        assert med[(c, d.k)] >= 0.98 * med[(c, best[c])], (c, d.k, best[c])


def test_grid_and_hillclimb_stop_at_the_budget(setup, prior, replay, tmp_path: Path) -> None:
    _, frec, _ = run("factorized", setup, prior, replay, tmp_path)
    budget = spent(frec)
    for name in ("grid", "hillclimb"):
        strategy, rec, stopped = run(name, setup, prior, replay, tmp_path, budget=budget)
        assert stopped and "budget" in stopped
        assert spent(rec) - max(m.cost_s for m in rec.log) < budget
        assert set(strategy.decisions()) == set(setup.concurrency)


def test_a_budget_keeps_room_for_the_mixed_replay(setup, prior, replay, tmp_path: Path) -> None:
    """`tune.time_budget_s` bounds the whole tune: the search stops while the final replay still fits."""
    budget = 0.5 * spent(run("grid", setup, prior, replay, tmp_path)[1])
    strategy = STRATEGIES["grid"](setup, prior)
    rec = Recorder(replay, Checkpoint(tmp_path / "kept.jsonl", "h"))
    stopped = drive(strategy, rec, budget_s=budget, keep_for_replay=True)
    kept = replay_estimate(rec, setup.concurrency)
    assert stopped and "kept for the mixed replay" in stopped and kept > 0
    before = spent(rec)
    assert before < budget <= before + kept  # stopped while the replay's estimate still fits


def test_grid_without_budget_is_the_exhaustive_sweep(setup, prior, replay, tmp_path: Path) -> None:
    strategy, rec, stopped = run("grid", setup, prior, replay, tmp_path)
    assert stopped is None
    assert {(r.concurrency, r.k) for r in replay.calls} == {
        (c, k) for c in setup.concurrency for k in (0, *setup.draft_lens)
    }


def test_hillclimb_walks_from_the_start_k(setup, prior, replay, tmp_path: Path) -> None:
    run("hillclimb", setup, prior, replay, tmp_path)
    first = {(r.concurrency, r.k) for r in replay.calls[: 2 * 3 * len(setup.concurrency)]}
    assert first == {(c, k) for c in setup.concurrency for k in (0, 3)}


def test_coarse_to_fine_order() -> None:
    assert coarse_to_fine(list(range(1, 9))) == [0, 8, 4, 2, 6, 1, 3, 5, 7]


def test_points_compared_are_measured_in_rounds(setup, prior, replay, tmp_path: Path) -> None:
    """A slow spell on a shared machine must slow plain decoding and speculation alike: the e2e runs a decision
    compares alternate (round r of every point, then round r + 1), never all repeats of one point back to back."""
    run("factorized", setup, prior, replay, tmp_path)
    e2e = [(r.concurrency, r.k, r.repeat) for r in replay.calls if r.kind == "e2e"]
    points = [(c, k) for c, k, _ in e2e[: next(i for i, (*_, r) in enumerate(e2e) if r == 1)]]
    assert len(points) >= 2  # the confirmation batch: the predicted best at every concurrency
    assert e2e[: len(points) * setup.repeats] == [(*p, i) for i in range(setup.repeats) for p in points]


def test_past_the_budget_only_requests_that_cost_nothing_are_answered(setup, prior, replay, tmp_path: Path) -> None:
    """A backend that answers some requests from runs it made already (vLLM: an engine per K serves every
    concurrency) says so; the budget stops the costly ones and lets those through, and its replay estimate is
    the backend's own."""

    class OneRunPerK:
        def __init__(self) -> None:
            self.ks: set[int] = set()

        def __call__(self, req):  # noqa: ANN001, ANN204
            values = replay(req)
            self.ks.add(req.k)
            return values

        def measured(self, req) -> bool:  # noqa: ANN001
            return req.k in self.ks

        def replay_s(self) -> float:
            return 0.0

    backend = OneRunPerK()
    rec = Recorder(backend, Checkpoint(tmp_path / "free.jsonl", "h"))
    stopped = drive(STRATEGIES["grid"](setup, prior), rec, budget_s=1e-9, keep_for_replay=True)
    assert stopped and "kept" not in stopped and replay_estimate(rec, setup.concurrency) == 0.0
    assert {m.request.k for m in rec.log} == {0}  # the first run, then every concurrency of K = 0, nothing else
    assert {m.request.concurrency for m in rec.log} == set(setup.concurrency)
