"""Per-run statistics of the reference runtime, in the shape the tuner consumes (docs/design/draft-length.md §1.2)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from specdeploy.metrics import distribution


@dataclass(frozen=True)
class RunStats:
    """What one `generate` call measured.

    `accept_hist[n]` is the fraction of (sequence, verification step) pairs that accepted exactly n
    drafted tokens (n = 0..draft_len); `acceptance_length` is tokens emitted per sequence per target
    step, bonus token included. Latencies are milliseconds (docs/design/metrics.md): TTFT from admission to the
    first token, TPOT per sequence ((last - first token) / (tokens - 1)), ITL each gap between two steps that
    gave a sequence tokens (a step gives it up to K + 1 at once; an admission's prefill stall included).
    """

    mechanism: str
    draft_len: int
    concurrency: int
    temperature: float
    num_prompts: int
    generated_tokens: int
    steps: int
    seq_steps: int
    accept_hist: tuple[float, ...]
    acceptance_length: float
    drafted_tokens: int
    accepted_tokens: int
    draft_time_s: float
    verify_time_s: float
    prefill_time_s: float
    wall_time_s: float
    tokens_per_s: float
    ttft_ms: dict[str, float] = field(default_factory=dict)
    tpot_ms: dict[str, float] = field(default_factory=dict)
    itl_ms: dict[str, float] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()  # e.g. a drafter accepting far less than its training record promises (health.py)

    @property
    def acceptance_rate(self) -> float:
        """Accepted / drafted tokens (0 when nothing was drafted)."""
        return self.accepted_tokens / self.drafted_tokens if self.drafted_tokens else 0.0

    @property
    def mean_batch(self) -> float:
        """Rows in the batch per verification step, averaged: `concurrency` while prompts queue (in-flight
        batching refills a finished row's slot at once), less only in the final drain."""
        return self.seq_steps / self.steps if self.steps else 0.0

    def to_dict(self) -> dict:
        out = asdict(self)
        out["accept_hist"] = list(self.accept_hist)
        out["warnings"] = list(self.warnings)
        out["acceptance_rate"] = self.acceptance_rate
        out["mean_batch"] = self.mean_batch
        return out


def expected_al(accept_hist: list[float] | tuple[float, ...], k: int) -> float:
    """E[AL](k) = 1 + sum_{i<=k} a_i with a_i = sum_{n>=i} h_n, valid for chain drafters (§1.2)."""
    total = 1.0
    for i in range(1, k + 1):
        total += sum(accept_hist[i:])
    return total


class Recorder:
    """Accumulates timings and acceptance over one `generate` call."""

    def __init__(self, draft_len: int) -> None:
        self.hist = [0] * (draft_len + 1)
        self.drafted = self.generated = 0
        self.draft_s = self.verify_s = self.prefill_s = 0.0
        self.ttft: list[float] = []
        self.tpot: list[float] = []
        self.itl: list[float] = []
        self.occupancy: list[int] = []  # rows in the batch at each verification step
        self.first_drafts = self.first_hits = 0  # row-steps that drafted; of them, those whose first draft held

    def forget_timings(self) -> None:
        """Drop the per-token timings read by `finish`: a server never finishes, and runs for days."""
        self.ttft.clear()
        self.tpot.clear()
        self.itl.clear()
        self.occupancy.clear()

    def take_first_drafts(self) -> tuple[int, int]:
        """Row-steps that drafted and those that kept their first draft since the last call: a server's loop
        feeds them to the silent-drafter check (health.py) as it goes."""
        taken = self.first_drafts, self.first_hits
        self.first_drafts = self.first_hits = 0
        return taken

    def finish(self, wall: float, **meta: Any) -> RunStats:
        seq_steps = sum(self.hist)
        accepted = sum(n * c for n, c in enumerate(self.hist))
        return RunStats(
            **meta,
            generated_tokens=self.generated,
            steps=len(self.occupancy),
            seq_steps=seq_steps,
            accept_hist=tuple(c / seq_steps if seq_steps else 0.0 for c in self.hist),
            acceptance_length=(accepted + seq_steps) / seq_steps if seq_steps else 0.0,
            drafted_tokens=self.drafted,
            accepted_tokens=accepted,
            draft_time_s=self.draft_s,
            verify_time_s=self.verify_s,
            prefill_time_s=self.prefill_s,
            wall_time_s=wall,
            tokens_per_s=self.generated / wall if wall > 0 else 0.0,
            ttft_ms=distribution(self.ttft),
            tpot_ms=distribution(self.tpot),
            itl_ms=distribution(self.itl),
        )
