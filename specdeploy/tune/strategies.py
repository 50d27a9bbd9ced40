"""Search strategies (ask/tell): `factorized` (measure acceptance once and cost once, predict, confirm the top
candidates), and the `grid` and `hillclimb` baselines. A strategy never measures: it asks for `Request`s and is
told the `Measurement`s (None for a run that crashed twice). Register new ones in `STRATEGIES`."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Generator, Mapping
from typing import Any

from specdeploy.errors import StepFailed
from specdeploy.perfmodel.predict import StepTimer
from specdeploy.tune.book import Book, Decision
from specdeploy.tune.fit import ITL_P99_FACTOR, AcceptanceFit, CostFit, acceptance_fit, predicted
from specdeploy.tune.objective import objective_value, sla_excess, summarize
from specdeploy.tune.setup import TuneSetup
from specdeploy.tune.types import Measurement, Request

Batch = list[Request]
Results = list[Measurement | None]
PriorFactory = Callable[[Mapping[int, float]], tuple[StepTimer, dict[str, Any]]]
"""K=0 step times per batch -> (the calibrated prior timer, the calibration record)."""

CONFIRM_WITHIN = 0.01
"""Predicted candidates within 1% are tied: only the smallest of them is confirmed (the selection policy's pick);
a confirmation that contradicts its prediction brings in the runners-up (`suspects`)."""
SUSPECT = 0.02
PROBE_ALL = 8
"""Up to this many candidate K, step cost is probed at every (c, K) (a probe costs ~1/50 of an end-to-end run);
beyond, at five K per concurrency and the calibrated model interpolates."""
GUARD_MARGIN = 1.2
"""Below this predicted speedup (20%), plain decoding is measured end to end too."""


class Strategy:
    """Generator-driven ask/tell: `plan()` yields request batches and receives their results."""

    name = "base"

    def __init__(self, setup: TuneSetup, prior: PriorFactory | None = None) -> None:
        self.setup, self.prior = setup, prior
        self.book = Book(setup)
        self.log: list[Measurement] = []
        self._gen = self.plan()
        self._pending: Batch = self._advance(None)

    def _advance(self, results: Results | None) -> Batch:
        try:
            return next(self._gen) if results is None else self._gen.send(results)
        except StopIteration:
            return []

    def ask(self) -> Batch:
        return list(self._pending)

    def tell(self, results: Results) -> None:
        self.log.extend(m for m in results if m is not None)
        self.book.add(results)
        self._pending = self._advance(results)

    def plan(self) -> Generator[Batch, Results, None]:
        raise NotImplementedError
        yield []

    def decisions(self) -> dict[int, Decision]:
        return {c: self.book.decide(c) for c in self.setup.concurrency}

    def fit_record(self) -> dict[str, Any]:
        return {}

    def repeats(self, c: int, k: int) -> Batch:
        return self.book.ask_repeats(c, k, self.setup.repeats)

    def remeasure_noisy(self) -> Generator[Batch, Results, None]:
        if noisy := self.book.noisy():
            yield [r for c, k in noisy for r in self.repeats(c, k)]


class Factorized(Strategy):
    name = "factorized"

    acc: AcceptanceFit | None = None
    cost: CostFit | None = None
    calibration: dict[str, Any] | None = None
    predictions: dict[tuple[int, int], dict[str, float]] = {}

    def plan(self) -> Generator[Batch, Results, None]:
        s = self.setup
        ks = list(s.draft_lens)
        c_acc = max([c for c in s.concurrency if c <= 8] or [min(s.concurrency)])
        runs = yield [Request("acceptance", c_acc, k) for k in ([s.k_max] if s.chain else ks)]
        self.acc = acceptance_fit([m for m in runs if m is not None], ks, s.chain)
        if self.acc is None:
            raise StepFailed("the acceptance run failed twice: nothing to predict from", hint="see result failures")
        probe_ks = sorted({0, *ks}) if len(ks) <= PROBE_ALL else sorted({0, *ks[::max(1, len(ks) // 4)], ks[-1]})
        probes = yield [Request("cost", c, k) for c in s.concurrency for k in probe_ks]
        table = {(m.request.concurrency, m.request.k): float(m.values["step_s"]) for m in probes if m is not None}
        if self.prior is None:
            raise StepFailed("the factorized strategy needs a prior timer (the performance model)")
        timer, self.calibration = self.prior({c: t for (c, k), t in table.items() if k == 0})
        self.cost = CostFit(timer, table)
        self.predictions = {(c, k): predicted(self.cost, self.acc, c, k) for c in s.concurrency for k in [0, *ks]}
        yield [r for c in s.concurrency for k in self.candidates(c) for r in self.repeats(c, k)]
        if suspects := self.suspects():  # a prediction the confirmation contradicts: confirm the runners-up too
            yield [r for c, k in suspects for r in self.repeats(c, k)]
        yield from self.remeasure_noisy()

    def suspects(self) -> list[tuple[int, int]]:
        """Measured/predicted per-user speed is one factor for every point (prefill, scheduling); where a
        confirmed point strays from the median factor by > 2%, its prediction is wrong: add the next two
        predicted candidates at that concurrency."""
        ratios = {(c, k): summ.median / self.predictions[(c, k)]["user_tps"]
                  for (c, k), runs in self.book.runs.items()
                  if (summ := summarize([m.values["user_tps"] for m in runs]))}
        if len(ratios) < 3:
            return []
        mid = statistics.median(ratios.values())
        out = []
        for c in sorted({c for (c, k), r in ratios.items() if abs(r / mid - 1) > SUSPECT}):
            ranked = sorted([0, *self.setup.draft_lens], key=lambda k: -self._pred_objective(c, k))
            out += [(c, k) for k in [k for k in ranked if not self.book.n(c, k)][:2]]
        return out

    def _pred_objective(self, c: int, k: int) -> float:
        return objective_value(self.predictions[(c, k)], self.setup.objective, {"p99_itl_ms": self.setup.p99_itl_ms}
                               if self.setup.p99_itl_ms else {})

    def candidates(self, c: int) -> list[int]:
        """The predicted best K (smallest within 1%), plus K = 0 unless speculation is predicted to pay by 20%."""
        ks = [0, *self.setup.draft_lens]
        score = {k: self._pred_objective(c, k) for k in ks}
        top = max(score.values())
        if top <= 0:  # nothing predicted within the SLA: confirm the closest point and plain decoding
            sla = {"p99_itl_ms": self.setup.p99_itl_ms} if self.setup.p99_itl_ms else {}
            return sorted({0, min(ks, key=lambda k: (sla_excess(self.predictions[(c, k)], sla), k))})
        ranked = [min(k for k in ks if score[k] >= top * (1 - CONFIRM_WITHIN))]  # the policy's tie-break
        if ranked[0] > 0 and self.predictions[(c, ranked[0])]["speedup"] < GUARD_MARGIN:
            ranked.append(0)
        return sorted(set(ranked))

    def decisions(self) -> dict[int, Decision]:
        def estimate(c: int) -> Callable[[int, Any], float | None]:
            return lambda k, summary: summary.median / self.predictions[(c, k)]["speedup"] if self.predictions else None
        return {c: self.book.decide(c, estimate(c)) for c in self.setup.concurrency}

    def fit_record(self) -> dict[str, Any]:
        return {"acceptance": self.acc.to_dict() if self.acc else None, "cost": self.cost.to_dict() if self.cost else
                None, "calibration": self.calibration, "itl_p99_factor": ITL_P99_FACTOR,
                "predictions": [v for _, v in sorted(self.predictions.items())]}


def coarse_to_fine(ks: list[int]) -> list[int]:
    """0, K_max, then midpoints: the order a budget-limited grid visits draft lengths."""
    full = [0, *ks]
    order, spans = [0, full[-1]], [(0, len(full) - 1)]
    while spans:
        lo, hi = spans.pop(0)
        if hi - lo > 1:
            mid = (lo + hi) // 2
            order.append(full[mid])
            spans += [(lo, mid), (mid, hi)]
    return list(dict.fromkeys(order))


class Grid(Strategy):
    """Exhaustive over (c, K) in coarse-to-fine order; with a budget it stops wherever the budget ends."""

    name = "grid"

    def plan(self) -> Generator[Batch, Results, None]:
        for k in coarse_to_fine(list(self.setup.draft_lens)):
            for c in self.setup.concurrency:
                yield self.repeats(c, k)


class HillClimb(Strategy):
    """Per concurrency: plain decoding, then the mechanism's default K, then step +-1 while it improves."""

    name = "hillclimb"
    start_k = 3

    def plan(self) -> Generator[Batch, Results, None]:
        ks = list(self.setup.draft_lens)
        start = min(ks, key=lambda k: abs(k - self.start_k))
        yield [r for c in self.setup.concurrency for k in (0, start) for r in self.repeats(c, k)]
        state = {c: (start, 0) for c in self.setup.concurrency}  # (current K, direction: 0 = try both)
        while state:
            asks: dict[int, list[int]] = {}
            for c, (k, d) in state.items():
                i = ks.index(k)
                nxt = [ks[j] for j in ((i - 1, i + 1) if d == 0 else (i + d,)) if 0 <= j < len(ks)]
                asks[c] = [n for n in nxt if not self.book.n(c, n)]
            yield [r for c, nk in asks.items() for n in nk for r in self.repeats(c, n)]
            for c, nk in list(asks.items()):
                here = self.book.summary(c, state[c][0])
                better = [n for n in nk if (s := self.book.summary(c, n)) and here and s.score > here.score]
                if not better:
                    del state[c]
                    continue
                n = max(better, key=lambda n: self.book.summary(c, n).score)  # type: ignore[union-attr]
                state[c] = (n, 1 if n > state[c][0] else -1)


STRATEGIES: dict[str, type[Strategy]] = {s.name: s for s in (Factorized, Grid, HillClimb)}
