"""What a strategy asks for (`Request`) and what a measurement backend answers (`Measurement`).

Kinds: `acceptance` (one run at K: histogram of accepted drafts per step, per category), `cost` (step time at
(B, K), drafting included, drafter quality excluded), `e2e` (an end-to-end run at concurrency c with K fixed: the
metrics of `specdeploy.metrics`, measured or predicted), `mixed` (the whole schedule replayed under mixed
concurrency: output token throughput with it and with plain decoding).
Every measurement carries `cost_s`: the device seconds it took (real, or simulated by the model backend).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from specdeploy.metrics import OUTPUT_THROUGHPUT, plain

PLAIN_THROUGHPUT = plain(OUTPUT_THROUGHPUT)
"""A mixed replay's output token throughput with plain decoding at the same concurrencies."""
PROMISED_THROUGHPUT = f"promised_{OUTPUT_THROUGHPUT}"
"""What the schedule's per-concurrency points promised for the mixed replay."""
KINDS = ("acceptance", "cost", "e2e", "mixed")


@dataclass(frozen=True)
class Request:
    kind: str
    concurrency: int = 1
    k: int = 0
    repeat: int = 0
    schedule: tuple[tuple[int, int], ...] = ()
    """`mixed` only: (concurrency, K) pairs replayed together."""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown measurement kind {self.kind!r}; known: {', '.join(KINDS)}")

    @property
    def key(self) -> str:
        """Stable identity in the checkpoint: the same request is never measured twice."""
        sched = ";".join(f"{c}:{k}" for c, k in self.schedule)
        return f"{self.kind}/c{self.concurrency}/k{self.k}/r{self.repeat}" + (f"/{sched}" if sched else "")

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "concurrency": self.concurrency,
            "k": self.k,
            "repeat": self.repeat,
            "schedule": [list(p) for p in self.schedule],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Request:
        return cls(
            str(data["kind"]),
            int(data.get("concurrency", 1)),
            int(data.get("k", 0)),
            int(data.get("repeat", 0)),
            tuple((int(c), int(k)) for c, k in data.get("schedule", ())),
        )


@dataclass(frozen=True)
class Measurement:
    request: Request
    values: dict[str, Any] = field(default_factory=dict)
    cost_s: float = 0.0
    ok: bool = True
    error: str | None = None
    attempt: int = 1
    replayed: bool = False

    def get(self, name: str, default: Any = None) -> Any:
        return self.values.get(name, default)

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.request.key,
            "request": self.request.to_dict(),
            "ok": self.ok,
            "values": self.values,
            "cost_s": self.cost_s,
            "error": self.error,
            "attempt": self.attempt,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], replayed: bool = True) -> Measurement:
        return cls(
            Request.from_dict(data["request"]),
            dict(data.get("values") or {}),
            float(data.get("cost_s", 0.0)),
            bool(data.get("ok", True)),
            data.get("error"),
            int(data.get("attempt", 1)),
            replayed,
        )


MeasureFn = Callable[[Request], dict[str, Any]]
"""A backend: request -> values (with `cost_s`, the device seconds spent); raises on a crash."""


def mixed_point(e2e: Callable[[Request], dict[str, Any]], schedule: Any) -> dict[str, Any]:
    """Every concurrency of the schedule at its K next to plain decoding at that concurrency, the two run back to
    back so a slow spell of the machine hits both; where the schedule says K = 0 they are one configuration, run
    once (two runs of one thing would only compare noise). Measuring backends share it for `mixed` requests."""
    runs, base, cost = [], [], 0.0
    for c, k in schedule:
        spec = e2e(Request("e2e", c, k))
        plain = e2e(Request("e2e", c, 0)) if k else spec
        runs.append((c, k, spec))
        base.append(plain)
        cost += spec["cost_s"] + (plain["cost_s"] if k else 0.0)
    return {
        OUTPUT_THROUGHPUT: sum(v[OUTPUT_THROUGHPUT] for *_, v in runs) / len(runs),
        PLAIN_THROUGHPUT: sum(v[OUTPUT_THROUGHPUT] for v in base) / len(base),
        "per_concurrency": [{"concurrency": c, "k": k, OUTPUT_THROUGHPUT: v[OUTPUT_THROUGHPUT]} for c, k, v in runs],
        "cost_s": cost,
    }
