"""The `factorized` strategy (docs/design/tuning.md §2): measure acceptance once and step cost once, predict the
objective at every (c, K), confirm only the predicted best per concurrency end to end, and spend more only where the
measurements contradict the prediction.

Probes: a slow probe (interference) would push its K out of the running, so the fastest of a point's probes
counts, and probes are repeated where one may mislead: next to the predicted best, where a step is slower than
one with more work, where the predicted objective dips in K. Confirmation: the measured/predicted factor is
common to every point; a confirmation further below it than the noise is measured again (slow runs), a K the
scaled prediction says beats the measured best by more than SUSPECT is confirmed too, and plain decoding is
measured wherever the measured speedup over its prediction is below GUARD_MARGIN. The 1% tie rule decides among
measured points. An SLA on p99 ITL is applied to predictions through a p99 ITL / step factor: a prior until the
confirmations measure it, then refitted, and the candidates derived again (a K the prior ruled out is measured,
as is the best K predicted over the SLA by less than the factor's uncertainty); a K is served only on its
measured p99 ITL.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Generator
from typing import Any

from specdeploy.errors import StepFailed
from specdeploy.metrics import PER_USER_THROUGHPUT, value
from specdeploy.tune.book import Decision
from specdeploy.tune.fit import AcceptanceFit, CostFit, ItlFit, acceptance_fit, implausible_steps, itl_fit, predicted
from specdeploy.tune.objective import MAX_REL_MAD, TIE, objective_value, sla_excess, summarize
from specdeploy.tune.search import Batch, PriorFactory, Results, Strategy
from specdeploy.tune.setup import TuneSetup
from specdeploy.tune.types import Request

PROBE_ALL = 8
"""Up to this many candidate K, step cost is probed at every (c, K) (a probe costs ~1/50 of an end-to-end run);
beyond, at five K per concurrency and the calibrated model interpolates."""
PROBE_TRIES = 3
"""At most this many probes of one (c, K)."""
SHADOW = 0.2
"""A neighbour of the predicted best within 20% of it is probed twice: a probe slowed by up to ~20% could hide
the real best there."""
SUSPECT = 0.02
"""A runner-up whose prediction, scaled by the measured factor, beats the measured best by > 2% is confirmed."""
GUARD_MARGIN = 1.2
"""Below this predicted speedup (20%), plain decoding is measured end to end too."""
REFITS = 3
"""At most this many rounds of refitting the p99 ITL / step factor and confirming the candidates it brings in."""


def probe_lens(ks: list[int], count: int | None) -> list[int]:
    """Plain decoding and the draft lengths probed: every one up to PROBE_ALL, else five spread over the range;
    `count` of them, spread and K_max first, where the backend says a probe of another K is costly."""
    if count is None:
        return sorted({0, *ks}) if len(ks) <= PROBE_ALL else sorted({0, *ks[:: max(1, len(ks) // 4)], ks[-1]})
    count = max(1, min(count, len(ks)))
    return sorted({0, ks[-1], *(ks[round(i * (len(ks) - 1) / (count - 1))] for i in range(count - 1))})


class Factorized(Strategy):
    name = "factorized"

    acc: AcceptanceFit | None = None
    cost: CostFit | None = None
    calibration: dict[str, Any] | None = None
    itl: ItlFit = ItlFit()
    predictions: dict[tuple[int, int], dict[str, float]] = {}

    def __init__(self, setup: TuneSetup, prior: PriorFactory | None = None) -> None:
        self.steps: dict[tuple[int, int], list[float]] = {}
        self.probed: dict[tuple[int, int], int] = {}
        super().__init__(setup, prior)

    def probe(self, points: list[tuple[int, int]]) -> Batch:
        """One more cost probe of each point (a crashed probe counts as a try)."""
        out = [Request("cost", c, k, self.probed.get((c, k), 0)) for c, k in points]
        self.probed.update({p: self.probed.get(p, 0) + 1 for p in points})
        return out

    def plan(self) -> Generator[Batch, Results, None]:
        s = self.setup
        ks = list(s.draft_lens)
        c_acc = max([c for c in s.concurrency if c <= s.prompts] or [min(s.concurrency)])  # one wave: cheapest
        runs = yield [Request("acceptance", c_acc, k) for k in ([s.k_max] if s.chain else ks)]
        self.acc = acceptance_fit([m for m in runs if m is not None], ks, s.chain)
        if self.acc is None:
            raise StepFailed("the acceptance run failed twice: nothing to predict from", hint="see result failures")
        if self.prior is None:
            raise StepFailed("the factorized strategy needs a prior timer (the performance model)")
        self.fit_cost((yield self.probe([(c, k) for c in s.concurrency for k in probe_lens(ks, s.probe_draft_lens)])))
        while again := self.suspect_probes():
            self.fit_cost((yield self.probe(again)))
        yield self.rounds((c, k) for c in s.concurrency for k in self.candidates(c))
        for _ in range(REFITS):
            self.refit_itl()
            if not (new := [(c, k) for c in s.concurrency for k in self.candidates(c) if not self.book.n(c, k)]):
                break
            yield self.rounds(new)
        if far := self.strays():
            yield self.rounds(far)
        if ups := self.runners_up():
            yield self.rounds(ups)
        if off := self.doubtful():
            yield self.rounds((c, 0) for c in off)
        yield from self.remeasure_noisy()
        self.refit_itl()  # the fit record counts every confirmation

    def fit_cost(self, probes: Results) -> None:
        """Step cost per probed (c, K) = its fastest probe (interference only slows a step down); the prior
        calibrated on the plain-decoding ones; the objective predicted everywhere."""
        for m in probes:
            if m is not None:
                self.steps.setdefault((m.request.concurrency, m.request.k), []).append(float(m.values["step_s"]))
        table = {ck: min(xs) for ck, xs in self.steps.items()}
        assert self.prior is not None and self.acc is not None
        timer, self.calibration = self.prior({c: t for (c, k), t in table.items() if k == 0})
        self.cost = CostFit(timer, table)
        self.predict()

    def predict(self) -> None:
        assert self.cost is not None and self.acc is not None
        ks = [0, *self.setup.draft_lens]
        self.predictions = {
            (c, k): predicted(self.cost, self.acc, c, k, self.itl.at(c)) for c in self.setup.concurrency for k in ks
        }

    def refit_itl(self) -> None:
        """p99 ITL / predicted step from every confirmed point (the median over its runs), then the predictions
        again: the prior's factor is a guess, and a guess too high rules out K that meet the SLA."""
        ratios = {}
        for (c, k), runs in self.book.runs.items():
            itl = [v for m in runs if (v := value(m.values, "itl", "p99")) is not None]
            if itl and (c, k) in self.predictions:
                ratios[(c, k)] = statistics.median(itl) / (1e3 * self.predictions[(c, k)]["step_s"])
        self.itl = itl_fit(ratios)
        self.predict()

    def suspect_probes(self) -> list[tuple[int, int]]:
        """Points to probe again: the predicted best's neighbours in K (twice in all), steps slower than a point
        with more work and dips of the predicted objective over K (up to PROBE_TRIES). The objective is unimodal
        in K (acceptance concave, step cost convex), so a dip is a slowed probe; a predicted probe is never slowed."""
        if self.setup.predicted:
            return []
        odd, near = set(implausible_steps({ck: min(xs) for ck, xs in self.steps.items()})), set()
        for c in self.setup.concurrency:
            ks = sorted(k for cc, k in self.steps if cc == c)
            if not ks:
                continue
            v = [self._pred_objective(c, k) for k in ks]
            top = max(range(len(ks)), key=v.__getitem__)
            odd |= {(c, ks[i]) for i in range(1, len(ks) - 1) if v[i] < (1 - TIE) * min(v[i - 1], v[i + 1])}
            near |= {(c, ks[i]) for i in (top - 1, top + 1) if 0 <= i < len(ks) and v[i] >= (1 - SHADOW) * v[top]}
        tries = {ck: 2 for ck in near} | {ck: PROBE_TRIES for ck in odd}
        return sorted(ck for ck, n in tries.items() if self.probed[ck] < n)

    def _ratios(self) -> dict[tuple[int, int], float]:
        return {
            (c, k): summ.median / self.predictions[(c, k)][PER_USER_THROUGHPUT]
            for (c, k), runs in self.book.runs.items()
            if (summ := summarize([m.values[PER_USER_THROUGHPUT] for m in runs]))
        }

    def factor(self) -> float | None:
        """Measured/predicted per-user speed is one factor for every point (prefill, scheduling): the median over
        the confirmed points (None below three)."""
        ratios = self._ratios()
        return statistics.median(ratios.values()) if len(ratios) >= 3 else None

    def strays(self) -> list[tuple[int, int]]:
        """Confirmed points more than the noise threshold below the common factor, not yet re-measured: their
        prediction agrees with the rest, so their runs were likely slowed (a predicted run never is)."""
        mid = None if self.setup.predicted else self.factor()
        return [
            ck
            for ck, r in sorted(self._ratios().items())
            if mid and r < mid * (1 - self.book.noise_limit()) and self.book.n(*ck) <= self.setup.repeats
        ]

    def runners_up(self, count: int = 2) -> list[tuple[int, int]]:
        """Unmeasured K whose prediction, scaled by the common factor, beats the best measured point at its
        concurrency by more than SUSPECT: the confirmation contradicts the predicted ranking there."""
        mid = self.factor()
        if not mid:
            return []
        out = []
        for c in self.setup.concurrency:
            ks = [0, *self.setup.draft_lens]
            best = max((s.median for k in ks if (s := self.book.summary(c, k))), default=0.0)
            expect = {k: mid * self._pred_objective(c, k) for k in ks if not self.book.n(c, k)}
            beat = sorted((k for k, v in expect.items() if v > best * (1 + SUSPECT)), key=lambda k: -expect[k])
            out += [(c, k) for k in beat[:count]]
        return out

    def doubtful(self) -> list[int]:
        """Concurrencies where plain decoding is unmeasured and the measured best beats its prediction by less
        than GUARD_MARGIN even when plain decoding gets the most favourable measured/predicted factor: a factor
        can be the speculative loop's alone (ragged acceptance in a batch), which plain decoding does not pay."""
        hi = max(self._ratios().values(), default=None)
        ks = [0, *self.setup.draft_lens]
        return [
            c
            for c in self.setup.concurrency
            if hi
            and not self.book.n(c, 0)
            and max((s.median for k in ks if (s := self.book.summary(c, k))), default=0.0)
            < GUARD_MARGIN * hi * self._pred_objective(c, 0)
        ]

    def _pred_objective(self, c: int, k: int) -> float:
        return objective_value(self.predictions[(c, k)], self.setup.objective, self._sla())

    def _sla(self) -> dict[str, float]:
        return {"p99_itl_ms": self.setup.p99_itl_ms} if self.setup.p99_itl_ms else {}

    def candidates(self, c: int) -> list[int]:
        """The predicted best K, plus K = 0 unless speculation is predicted to pay by 20%, plus the best K predicted
        over the SLA by less than the ITL factor's uncertainty (`near_sla`). (The 1% tie rule is applied to
        measurements: on predictions it would add the prediction's error to the 1% it gives away.)"""
        ks = [0, *self.setup.draft_lens]
        score = {k: self._pred_objective(c, k) for k in ks}
        near = self.near_sla(c, max(score.values()))
        if max(score.values()) <= 0:  # nothing predicted within the SLA: confirm the closest point and plain decoding
            return sorted({0, min(ks, key=lambda k: (sla_excess(self.predictions[(c, k)], self._sla()), k)), *near})
        best = max(ks, key=score.__getitem__)
        out = [0, best] if best > 0 and self.predictions[(c, best)]["speedup"] < GUARD_MARGIN else [best]
        return sorted({*out, *near})

    def near_sla(self, c: int, best: float) -> list[int]:
        """The K predicted to beat `best` by more than the tie but to miss the SLA by less than the measured factor's
        uncertainty (its spread, at least a run's MAX_REL_MAD): measuring decides it, not a prediction that
        close. None before a measurement: the refit after the first confirmations comes first."""
        if not self.itl.points or not self._sla():
            return []
        margin = max(MAX_REL_MAD, self.itl.spread)
        pts = {k: p for (cc, k), p in self.predictions.items() if cc == c}
        fast = {k: objective_value(p, self.setup.objective, {}) for k, p in pts.items()}
        near = [k for k, p in pts.items() if 0 < sla_excess(p, self._sla()) <= margin and fast[k] > best * (1 + TIE)]
        return [max(near, key=fast.__getitem__)] if near else []

    def decisions(self) -> dict[int, Decision]:
        def estimate(c: int) -> Callable[[int, Any], float | None]:
            return lambda k, summary: summary.median / self.predictions[(c, k)]["speedup"] if self.predictions else None

        return {c: self.book.decide(c, estimate(c)) for c in self.setup.concurrency}

    def fit_record(self) -> dict[str, Any]:
        return {
            "acceptance": self.acc.to_dict() if self.acc else None,
            "cost": self.cost.to_dict() if self.cost else None,
            "calibration": self.calibration,
            "itl_p99_factor": self.itl.to_dict(),
            "predictions": [v for _, v in sorted(self.predictions.items())],
        }
