"""The e2e book every strategy keeps: repeats per (c, K) -> objective summaries -> one decision per concurrency,
with the guard (K = 0 unless speculation beats plain decoding beyond noise)."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from specdeploy.tune.objective import (
    MAX_REL_MAD,
    Summary,
    beats,
    objective_value,
    select,
    sla_excess,
    sla_ok,
    summarize,
)
from specdeploy.tune.setup import TuneSetup
from specdeploy.tune.types import Measurement, Request

NOISE_FLOOR = 2.0
"""A point is noisy above this multiple of the typical relative MAD (when that is above MAX_REL_MAD)."""


@dataclass
class Decision:
    concurrency: int
    k: int
    objective: float
    baseline: float | None
    reason: str
    feasible: bool = True
    candidates: dict[int, dict[str, float]] = field(default_factory=dict)
    rejected: list[int] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "concurrency": self.concurrency,
            "k": self.k,
            "objective": self.objective,
            "baseline": self.baseline,
            "speedup": self.objective / self.baseline if self.baseline else None,
            "reason": self.reason,
            "feasible": self.feasible,
            "candidates": {str(k): v for k, v in sorted(self.candidates.items())},
            "rejected": self.rejected,
        }


class Book:
    def __init__(self, setup: TuneSetup) -> None:
        self.setup = setup
        self.runs: dict[tuple[int, int], list[Measurement]] = {}

    def add(self, results: list[Measurement | None]) -> None:
        for m in results:
            if m is not None and m.request.kind == "e2e" and not m.values.get("failed_requests"):
                self.runs.setdefault((m.request.concurrency, m.request.k), []).append(m)

    def samples(self, c: int, k: int) -> list[float]:
        s = self.setup
        return [objective_value(m.values, s.objective, s.sla) for m in self.runs.get((c, k), [])]

    def summary(self, c: int, k: int) -> Summary | None:
        xs = self.samples(c, k)
        return summarize(xs) if xs else None

    def n(self, c: int, k: int) -> int:
        return len(self.runs.get((c, k), []))

    def next_repeat(self, c: int, k: int) -> int:
        return max((m.request.repeat for m in self.runs.get((c, k), [])), default=-1) + 1

    def ask_repeats(self, c: int, k: int, count: int) -> list[Request]:
        start = self.next_repeat(c, k)
        return [Request("e2e", c, k, r) for r in range(start, start + count)]

    def _rel_mads(self) -> list[float]:
        """The relative MAD of every point measured at least twice."""
        return [s.rel_mad for ck in self.runs if (s := self.summary(*ck)) and s.n >= 2]

    def typical_noise(self) -> float:
        """The median relative MAD over the points measured at least twice (0 before any): how much one run moves."""
        mads = self._rel_mads()
        return statistics.median(mads) if mads else 0.0

    def noise_limit(self) -> float:
        """The relative MAD above which a point is noisy: MAX_REL_MAD, or NOISE_FLOOR x the median over the
        measured points (from three on) when the whole machine is that noisy: then no point is noisier than the
        rest, and the guard's margin (both points' MADs) already demands more of speculation."""
        mads = self._rel_mads()
        return max(MAX_REL_MAD, NOISE_FLOOR * statistics.median(mads)) if len(mads) >= 3 else MAX_REL_MAD

    def noisy(self) -> list[tuple[int, int]]:
        """Points whose relative MAD is above the noise limit and not yet re-measured."""
        limit = self.noise_limit()
        return [
            (c, k)
            for (c, k) in self.runs
            if (s := self.summary(c, k)) and s.n >= 2 and s.rel_mad > limit and s.n <= self.setup.repeats
        ]

    def over_sla(self, c: int) -> list[int]:
        """K at c with a run over the goodput SLA: never served, however its other runs went (the median of
        [x, x, 0] is x, but an SLA one run in three breaks is not met)."""
        if not (self.setup.sla and self.setup.objective == "goodput"):
            return []
        return sorted(
            k for (cc, k), ms in self.runs.items() if cc == c and not all(sla_ok(m.values, self.setup.sla) for m in ms)
        )

    def closest(self, c: int) -> tuple[int, float] | None:
        """The measured point at c nearest to meeting the SLA: (K, relative overshoot)."""
        pts = [
            (k, min(sla_excess(m.values, self.setup.sla) for m in ms)) for (cc, k), ms in self.runs.items() if cc == c
        ]
        return min(pts, key=lambda p: (p[1], p[0])) if pts else None

    def decide(self, c: int, baseline_estimate: Callable[[int, Summary], float | None] | None = None) -> Decision:
        ks = sorted(k for (cc, k) in self.runs if cc == c)
        sums = {k: s for k in ks if (s := self.summary(c, k))}
        limit = self.noise_limit()
        over = self.over_sla(c)
        rejected = [k for k, s in sums.items() if s.rel_mad > limit and s.n >= 2 and k not in over]
        good = {k: s for k, s in sums.items() if k not in rejected and k not in over and s.median > 0}
        cands = {k: s.to_dict() for k, s in sums.items()}
        if not good and any(s.median > 0 for k, s in sums.items() if k not in over):  # noise left nothing
            off = sums.get(0)
            return Decision(
                c,
                0,
                off.median if off else 0.0,
                off.median if off else None,
                f"every measured point is noisier than {limit:.0%} (relative MAD): speculation off",
                True,
                cands,
                rejected,
            )
        if not good:
            reason = "no feasible measured point (SLA)" if sums else "nothing measured"
            return Decision(c, 0, 0.0, None, reason + ": speculation off", False, cands, rejected)
        k = select(good)
        off = good.get(0)
        if k > 0 and off is not None and not beats(good[k], off):
            return Decision(
                c, 0, off.median, off.median, f"K={k} does not beat plain decoding beyond noise", True, cands, rejected
            )
        base = off.median if off else (baseline_estimate(k, good[k]) if baseline_estimate else None)
        if k > 0 and off is None and base is not None and good[k].median <= base * (1 + limit):
            return Decision(
                c, 0, base, base, f"K={k} within noise of the predicted plain decoding", True, cands, rejected
            )
        return Decision(
            c, k, good[k].median, base, "best measured" if k else "plain decoding is best", True, cands, rejected
        )
