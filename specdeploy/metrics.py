"""The serving metrics by the names the field gives them (docs/design/metrics.md has the definitions and how
each maps to trtllm-bench, AIPerf and `vllm bench serve`).

A measured run gives three throughputs and three per-request latency distributions, each as mean, p50, p90
and p99 in flat keys (`p99_itl_ms`, the spelling the profile's SLA limits use). A prediction (the performance
model) gives one value per metric (`itl_ms`): a deterministic model has no distribution to take percentiles of.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

REQUEST_THROUGHPUT = "request_throughput"
"""Requests completed per second of the run."""
OUTPUT_THROUGHPUT = "output_token_throughput"
"""Output tokens per second of the run, all users together."""
PER_USER_THROUGHPUT = "output_token_throughput_per_user"
"""Output tokens per second one user sees."""
THROUGHPUTS = (REQUEST_THROUGHPUT, OUTPUT_THROUGHPUT, PER_USER_THROUGHPUT)

LATENCIES = ("ttft", "tpot", "itl")
"""Time to first token, time per output token (per request: (last - first token) / (tokens - 1)), inter-token
latency (each gap between two deliveries of one request's tokens; a speculative step delivers several)."""
STATS = ("mean", "p50", "p90", "p99")

UNITS = {
    REQUEST_THROUGHPUT: "requests/s",
    OUTPUT_THROUGHPUT: "tokens/s",
    PER_USER_THROUGHPUT: "tokens/s per user",
    "ttft": "ms",
    "tpot": "ms",
    "itl": "ms",
}
TITLES = {
    REQUEST_THROUGHPUT: "request throughput",
    OUTPUT_THROUGHPUT: "output token throughput",
    PER_USER_THROUGHPUT: "output token throughput per user",
    "ttft": "TTFT",
    "tpot": "TPOT",
    "itl": "ITL",
}


def plain(name: str) -> str:
    """A metric of plain decoding (speculation off) beside the speculative one: `plain_output_token_throughput`."""
    return f"plain_{name}"


def key(latency: str, stat: str | None = None) -> str:
    """`p99_itl_ms` for a measured statistic, `itl_ms` for a prediction's one value."""
    return f"{stat}_{latency}_ms" if stat else f"{latency}_ms"


MEASURED_KEYS = (*THROUGHPUTS, *(key(name, stat) for name in LATENCIES for stat in STATS))
"""Every metric a measured run carries, in the order tables and CSV columns show them."""
PREDICTED_KEYS = (*THROUGHPUTS, *(key(name) for name in LATENCIES))


def distribution(values: Sequence[float]) -> dict[str, float]:
    """Mean and p50/p90/p99 (nearest rank on the sorted values); zeros for no values."""
    if not values:
        return dict.fromkeys(STATS, 0.0)
    ordered = sorted(values)

    def rank(q: float) -> float:
        return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]

    return {"mean": sum(ordered) / len(ordered), "p50": rank(0.5), "p90": rank(0.9), "p99": rank(0.99)}


def latency_fields(latency: str, stats: Mapping[str, Any] | None) -> dict[str, float | None]:
    """One distribution (`{"mean": .., "p50": ..}`, in ms) as flat keys; None where a statistic is missing."""
    stats = stats or {}
    return {key(latency, stat): None if stats.get(stat) is None else float(stats[stat]) for stat in STATS}


def value(values: Mapping[str, Any], latency: str, stat: str) -> float | None:
    """A latency statistic of a measurement, or a prediction's one value standing for all of them."""
    found = values.get(key(latency, stat), values.get(key(latency)))
    return None if found is None else float(found)


def measured(
    requests_per_s: float,
    tokens_per_s: float,
    per_user: float,
    *,
    ttft: Mapping[str, Any] | None,
    tpot: Mapping[str, Any] | None,
    itl: Mapping[str, Any] | None,
) -> dict[str, float | None]:
    """A measured run's metrics: the three throughputs and each latency's mean/p50/p90/p99 (ms)."""
    return {
        REQUEST_THROUGHPUT: requests_per_s,
        OUTPUT_THROUGHPUT: tokens_per_s,
        PER_USER_THROUGHPUT: per_user,
        **latency_fields("ttft", ttft),
        **latency_fields("tpot", tpot),
        **latency_fields("itl", itl),
    }
