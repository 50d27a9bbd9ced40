"""The result of a tune: built once when the tune ends, written as `tune/result.json` (`record()`), read back by
a build that adopts it, the lock, the report and `tune --json` (`to_dict()`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from specdeploy.metrics import OUTPUT_THROUGHPUT, PER_USER_THROUGHPUT, key
from specdeploy.tune.types import PLAIN_THROUGHPUT, PROMISED_THROUGHPUT

FORMAT = "specdeploy.tune/2"
"""The schema version of `record()`. /2 names the metrics as the field does (docs/design/metrics.md), shows a
prediction as one value and its error band's errors as relative; `readable()` also reads /1."""
V1_NAMES = {
    "system_tps": OUTPUT_THROUGHPUT,
    "user_tps": PER_USER_THROUGHPUT,
    "baseline_tps": PLAIN_THROUGHPUT,
    "promised_tps": PROMISED_THROUGHPUT,
    "itl_p99_ms": key("itl", "p99"),
    "ttft_p99_ms": key("ttft", "p99"),
    "max_abs_err": "max_rel_err",
    "median_abs_err": "median_rel_err",
}
"""/1's names -> /2's for the same numbers (/1's errors were relative all along)."""


@dataclass(frozen=True)
class BackendChoice:
    """What measured (or predicted), what the user asked for, and why that one."""

    requested: str
    picked: str
    why: str

    def to_dict(self) -> dict[str, str]:
        return {"requested": self.requested, "picked": self.picked, "why": self.why}


@dataclass(frozen=True)
class TuneResult:
    """Decisions per concurrency, the schedule they give, how sure and what it cost. The JSON parts (setup, fit,
    decisions, schedule ...) keep the shapes the report and the lock read (tune/README.md)."""

    profile: str
    backend: str
    evidence: str
    """"measured", or "predicted" (the performance model: no device time, no confidence level)."""
    strategy: str
    setup: dict[str, Any]
    fit: dict[str, Any] | None
    decisions: list[dict[str, Any]]
    schedule: dict[str, Any]
    mixed: dict[str, Any] | None
    sla: dict[str, Any]
    confidence: dict[str, Any]
    cost: dict[str, Any]
    stopped: str | None
    problems: list[str]
    """An unreachable SLA or a collapse under mixed concurrency (short of the promise, still above plain
    decoding): the tune fails (exit 1) after writing."""
    failures: list[dict[str, Any]]
    measurements: list[dict[str, Any]]
    reproduce: list[str]
    backend_choice: BackendChoice
    profile_hash: str
    code: str
    """The profile and the tune code it was made with: a build adopts the result only for the same two."""
    result_path: str
    """Where `record()` is written (a failed build step moves it beside the step's evidence)."""
    error_band: dict[str, Any] | None = None
    """Predictions only: how far the performance model was from published records on rows like this (None:
    no record to compare with)."""
    environment: dict[str, Any] | None = None
    """Where and with what it ran: host, CPU, GPUs and driver, engine and package versions, date, specdeploy's
    version and commit (`tune.environment`)."""
    report: str | None = None
    """The HTML report beside the result, when one was written."""

    def record(self) -> dict[str, Any]:
        """What `tune/result.json` holds."""
        return {
            "format": FORMAT,
            "profile": self.profile,
            "backend": self.backend,
            "evidence": self.evidence,
            "strategy": self.strategy,
            "setup": self.setup,
            "fit": self.fit,
            "decisions": self.decisions,
            "schedule": self.schedule,
            "mixed": self.mixed,
            "sla": self.sla,
            "confidence": self.confidence,
            "cost": self.cost,
            "stopped": self.stopped,
            "problems": self.problems,
            "failures": self.failures,
            "measurements": self.measurements,
            "reproduce": self.reproduce,
            "backend_choice": self.backend_choice.to_dict(),
            "profile_hash": self.profile_hash,
            "code": self.code,
            **({"error_band": self.error_band} if self.evidence == "predicted" else {}),
            "environment": self.environment,
        }

    def to_dict(self) -> dict[str, Any]:
        """The record and where it and its report are (`tune --json` prints it without the measurements)."""
        return {
            **self.record(),
            **({"report": self.report} if self.report is not None else {}),
            "result_path": self.result_path,
        }


def readable(record: dict[str, Any]) -> dict[str, Any]:
    """A recorded result in this format's shape: /2 as it is, /1 with its metrics and error band renamed (the
    numbers kept; what /1 did not record stays absent); any other format is refused."""
    if record.get("format") == FORMAT:
        return record
    if record.get("format") != "specdeploy.tune/1":
        raise ValueError(f"not a tune result this specdeploy reads: format {record.get('format')!r}")
    return {**v1_renamed(record), "format": FORMAT, "read_from": "specdeploy.tune/1"}


def v1_renamed(value: Any) -> Any:
    """A /1 record or part of one (a measurement's values) with /2's names."""
    if isinstance(value, dict):
        return {V1_NAMES.get(k, k): v1_renamed(v) for k, v in value.items()}
    return [v1_renamed(v) for v in value] if isinstance(value, list) else value
