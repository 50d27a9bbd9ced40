"""The factorized model: acceptance from one run at K_max (chain drafters) or per K (others), step cost from a
few probes on top of the calibrated performance model, and the objective predicted at every (c, K).

    E[AL](K) = 1 + sum_{i<=K} a_i        T(B, K) = prior(B, K) x r(B, K)       (docs/design/draft-length.md §1.2, §1.3)

r is the measured/prior ratio at the probed points, interpolated linearly in K and in log B (clamped outside).
The predicted p99 ITL is the step times a p99 ITL / step factor: a prior until end-to-end runs measured it
(`ItlFit`, docs/design/tuning.md §2).
"""

from __future__ import annotations

import bisect
import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from specdeploy.metrics import OUTPUT_THROUGHPUT, PER_USER_THROUGHPUT, key
from specdeploy.perfmodel.acceptance import AcceptanceProfile
from specdeploy.perfmodel.predict import StepTimer
from specdeploy.tune.types import Measurement

ITL_P99_PRIOR = 1.25
"""p99 ITL / step before any end-to-end run measured it, an assumption: every step delivers to each running request,
so the ITL is the step (docs/design/metrics.md §2) plus what an engine adds now and then (a joining request's
prefill, scheduling); 25% for that is a guess. The first confirmations replace it (`itl_fit`)."""
ITL_MIN_POINTS = 2
"""A concurrency with this many measured points gets its own p99 ITL / step factor; below, the median over all."""
STEP_TOL = 0.01
"""A step probed more than 1% slower than a point with more work is implausible (probed again)."""


@dataclass
class AcceptanceFit:
    al: dict[int, float]
    source: str
    hist: list[float] = field(default_factory=list)
    profile: AcceptanceProfile | None = None
    per_category: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "al": {str(k): v for k, v in sorted(self.al.items())},
            "hist": self.hist,
            "prefix": list(self.profile.prefix) if self.profile else None,
            "per_category": self.per_category,
        }


def _al_table(profile: AcceptanceProfile, ks: list[int]) -> dict[int, float]:
    return {0: 1.0, **{k: profile.expected_al(k) for k in ks}}


def acceptance_fit(records: list[Measurement], ks: list[int], chain: bool) -> AcceptanceFit | None:
    """Chain: the histogram at K_max gives E[AL](K) for every K <= K_max. Others: AL measured per K."""
    runs = [m for m in records if m.request.kind == "acceptance"]
    if not runs:
        return None
    if chain:
        run = max(runs, key=lambda m: m.request.k)
        profile = AcceptanceProfile.from_histogram(run.values["hist"], f"measured histogram at K={run.request.k}")
        cats = {}
        for name, hist in (run.values.get("per_category") or {}).items():
            if sum(hist) > 0:
                p = AcceptanceProfile.from_histogram(hist, f"category {name}")
                cats[name] = {
                    "hist": list(hist),
                    "prefix": list(p.prefix),
                    "al": {str(k): p.expected_al(k) for k in ks},
                }
        return AcceptanceFit(_al_table(profile, ks), profile.source, list(run.values["hist"]), profile, cats)
    table = {0: 1.0, **{m.request.k: float(m.values["al"]) for m in runs}}
    return AcceptanceFit(table, "AL measured per K (non-chain mechanism)")


class CostFit:
    """Step time at any (B, K): the prior timer scaled by the measured/prior ratio of the nearest probes."""

    def __init__(self, prior: StepTimer, probes: Mapping[tuple[int, int], float]) -> None:
        self.prior = prior
        self.probes = dict(probes)
        self.ratio: dict[int, list[tuple[int, float]]] = {}
        for (b, k), seconds in sorted(self.probes.items()):
            self.ratio.setdefault(b, []).append((k, seconds / prior.step_seconds(b, k)))

    @staticmethod
    def _interp(xs: list[float], ys: list[float], x: float) -> float:
        if x <= xs[0]:
            return ys[0]
        if x >= xs[-1]:
            return ys[-1]
        i = bisect.bisect_right(xs, x)
        w = (x - xs[i - 1]) / (xs[i] - xs[i - 1])
        return ys[i - 1] * (1 - w) + ys[i] * w

    def _r(self, b: int, k: int) -> float:
        if not self.ratio:
            return 1.0
        bs = sorted(self.ratio)
        at_b = [self._interp([p[0] for p in self.ratio[x]], [p[1] for p in self.ratio[x]], k) for x in bs]
        return self._interp([math.log(x) for x in bs], at_b, math.log(b))

    def step_seconds(self, batch: int, k: int) -> float:
        return self.prior.step_seconds(batch, k) * self._r(batch, k)

    def to_dict(self) -> dict[str, Any]:
        return {
            "probes": [{"concurrency": b, "k": k, "step_s": s} for (b, k), s in sorted(self.probes.items())],
            "ratio": {str(b): [[k, r] for k, r in pts] for b, pts in sorted(self.ratio.items())},
        }


@dataclass(frozen=True)
class ItlFit:
    """p99 ITL / predicted step: the prior, or the median of the measured points' ratios (per concurrency where
    ITL_MIN_POINTS were measured there: queueing and prefill interference grow with it) and their spread."""

    factor: float = ITL_P99_PRIOR
    per_concurrency: dict[int, float] = field(default_factory=dict)
    points: int = 0
    spread: float = 0.0
    """The ratios' median absolute deviation over their median: how far one point strays from the factor."""

    def at(self, c: int) -> float:
        return self.per_concurrency.get(c, self.factor)

    @property
    def source(self) -> str:
        if not self.points:
            return "prior (no end-to-end run yet)"
        return f"measured: median p99 ITL / predicted step over {self.points} confirmed point(s)"

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.factor,
            "source": self.source,
            "points": self.points,
            "spread": self.spread,
            "per_concurrency": {str(c): f for c, f in sorted(self.per_concurrency.items())},
        }


def itl_fit(ratios: Mapping[tuple[int, int], float]) -> ItlFit:
    """The factor from measured p99 ITL / predicted step per confirmed (c, K); the prior when there is none (a
    ratio that is not positive, a run that recorded no ITL, says nothing of the factor)."""
    ratios = {ck: r for ck, r in ratios.items() if r > 0}
    if not ratios:
        return ItlFit()
    mid = statistics.median(ratios.values())
    per_c: dict[int, list[float]] = {}
    for (c, _), r in ratios.items():
        per_c.setdefault(c, []).append(r)
    return ItlFit(
        mid,
        {c: statistics.median(rs) for c, rs in per_c.items() if len(rs) >= ITL_MIN_POINTS},
        len(ratios),
        statistics.median(abs(r - mid) for r in ratios.values()) / mid,
    )


def implausible_steps(steps: Mapping[tuple[int, int], float], tol: float = STEP_TOL) -> list[tuple[int, int]]:
    """Probed (B, K) slower than a probed point with more work (the next larger B at that K, or the next longer
    K at that B) by more than `tol`: more work is never faster, so that probe was slowed by something else."""
    out = []
    for (b, k), t in sorted(steps.items()):
        bigger = min((bb for bb, kk in steps if kk == k and bb > b), default=None)
        longer = min((kk for bb, kk in steps if bb == b and kk > k), default=None)
        more = [steps[(b, longer)]] if longer is not None else []
        more += [steps[(bigger, k)]] if bigger is not None else []
        if any(t > (1 + tol) * x for x in more):
            out.append((b, k))
    return out


def predicted(cost: StepTimer, acc: AcceptanceFit, c: int, k: int, itl_factor: float) -> dict[str, float]:
    """The predicted end-to-end values at (c, K) under the names the backends measure (specdeploy.metrics);
    p99 ITL = `itl_factor` x step (`ItlFit.at(c)`)."""
    step = cost.step_seconds(c, k)
    al = acc.al.get(k, 1.0)
    user = al / step
    return {
        "concurrency": c,
        "k": k,
        "step_s": step,
        "al": al,
        PER_USER_THROUGHPUT: user,
        OUTPUT_THROUGHPUT: c * user,
        key("itl", "p99"): 1e3 * itl_factor * step,
        "speedup": al * cost.step_seconds(c, 0) / step,
    }
