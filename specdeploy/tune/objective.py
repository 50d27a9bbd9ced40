"""Objectives, SLA checks and the selection policy (docs/design/tuning.md §3): median with a MAD penalty, noisy points
rejected, candidates within 1% tied -> the smaller K."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from specdeploy.metrics import OUTPUT_THROUGHPUT, PER_USER_THROUGHPUT, value

TIE = 0.01
"""Candidates within 1% of the best are tied; the smaller K wins."""
MAX_REL_MAD = 0.05
"""A point whose MAD is above 5% of its median is re-measured once, then rejected."""


FIELDS = {"p99_itl_ms": ("itl", "p99"), "p99_ttft_ms": ("ttft", "p99")}
"""SLA limit (profile name) -> the latency and statistic it bounds (a prediction's one value stands for it)."""


def sla_ok(values: Mapping[str, Any], sla: Mapping[str, float]) -> bool:
    return all((v := value(values, *FIELDS[name])) is not None and v <= limit for name, limit in sla.items())


def sla_excess(values: Mapping[str, Any], sla: Mapping[str, float]) -> float:
    """How far a point misses the SLA (0 when it meets it): the largest relative overshoot."""
    return max(
        [
            0.0,
            *(
                (v if (v := value(values, *FIELDS[n])) is not None else float("inf")) / lim - 1.0
                for n, lim in sla.items()
            ),
        ]
    )


def objective_value(values: Mapping[str, Any], objective: str, sla: Mapping[str, float]) -> float:
    """throughput: output tok/s; latency: output tok/s per user; goodput: output tok/s if the SLA holds, else 0."""
    if objective == "latency":
        return float(values[PER_USER_THROUGHPUT])
    if objective == "goodput" and not sla_ok(values, sla):
        return 0.0
    return float(values[OUTPUT_THROUGHPUT])


@dataclass(frozen=True)
class Summary:
    median: float
    mad: float
    n: int

    @property
    def rel_mad(self) -> float:
        return self.mad / self.median if self.median > 0 else 0.0

    @property
    def score(self) -> float:
        """Median with a MAD penalty: a noisy point has to win by more than its noise."""
        return self.median - self.mad

    def to_dict(self) -> dict[str, float]:
        return {"median": self.median, "mad": self.mad, "rel_mad": self.rel_mad, "n": self.n}


def summarize(samples: Sequence[float]) -> Summary:
    med = statistics.median(samples)
    return Summary(med, statistics.median(abs(s - med) for s in samples), len(samples))


def select(candidates: Mapping[int, Summary], tie: float = TIE) -> int:
    """Best K by penalised median; within `tie` of the best -> the smaller K (non-monotonic optima kept)."""
    top = max(s.score for s in candidates.values())
    return min(k for k, s in candidates.items() if s.score >= top * (1.0 - tie))


def beats(spec: Summary, off: Summary, noise_floor: float = TIE) -> bool:
    """Speculation pays only if it beats plain decoding beyond both points' noise (and the 1% tie)."""
    margin = max(noise_floor * off.median, spec.mad + off.mad)
    return spec.median > off.median + margin
