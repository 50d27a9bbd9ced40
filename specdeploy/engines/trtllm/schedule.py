"""The canonical schedule (`specdeploy.schedule`) as each TensorRT-LLM line's `draft_len_schedule`
(docs/design/trtllm.md §5).

The profile writes lower bounds `{concurrency_lo: K}`; 1.2.x and 1.3.0rc0-rc2 read keys as lower bounds (largest
key <= batch, key 1 required, `schedule[1] == max_draft_len`); 1.3.0rc8 on reads them as upper bounds (above the
largest key speculation is off); between, the rule is UNKNOWN (`VersionLine.schedule`). The tuner and the emitter
both go through `emit_schedule`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from specdeploy.engines.trtllm.versions import VersionLine, version_line
from specdeploy.schedule import Range, canonical


def emit_schedule(
    schedule: Mapping[int, int] | Sequence[Sequence[int]],
    line: VersionLine,
    *,
    max_concurrency: int | None = None,
    max_batch_size: int | None = None,
) -> dict[int, int]:
    """The `draft_len_schedule` dict for `line`.

    Lower bounds (1.2.x, 1.3.0rc0-rc2): keys = bs_lo (first = 1), plus `{last_hi + 1: 0}` to stop speculating.
    Upper bounds (1.3.0rc8 on): keys = bs_hi; trailing K = 0 ranges are dropped (above the last key is off).
    Both: the first range carries the largest K (upstream: schedule[smallest key] == max_draft_len).
    """
    ranges = canonical(schedule, max_concurrency=max_concurrency, max_batch_size=max_batch_size)
    if line.schedule == "unknown":
        raise ValueError(
            f"how TensorRT-LLM {line.range} reads draft_len_schedule is UNKNOWN: pin a release whose "
            "rule was read (1.2.x, 1.3.0rc2, 1.3.0rc8 or later)"
        )
    if any(k > ranges[0][2] for *_, k in ranges):
        raise ValueError(
            f"TensorRT-LLM {line.range} needs the smallest schedule key's K == max_draft_len (the "
            f"largest K); got {[list(r) for r in ranges]}"
        )
    if line.schedule == "lower_bound":
        out = {lo: k for lo, _, k in ranges}
        if ranges[-1][2] > 0:
            out[ranges[-1][1] + 1] = 0
        return out
    while len(ranges) > 1 and ranges[-1][2] == 0:
        ranges.pop()
    return {hi: k for _, hi, k in ranges}


def clamp_tuned(lower: dict[int, int], release: str) -> tuple[dict[int, int], list[str]]:
    """Every line needs the smallest key's K = max_draft_len: a larger K above concurrency 1 is clamped to it."""
    line = version_line(release)
    if max(lower.values()) <= lower[1]:
        return lower, []
    note = (
        f"TRT-LLM {line.range} needs the smallest key's K = max_draft_len: K clamped to {lower[1]} "
        f"above concurrency 1 (tuned {lower})"
    )
    return {c: min(k, lower[1]) for c, k in lower.items()}, [note]


def emitted_schedule(ranges: Sequence[Range], max_conc: int, release: str) -> tuple[dict[str, Any], list[str]]:
    """The `draft_len_schedule` the release reads for tuned ranges (one K where its semantics are UNKNOWN)."""
    line = version_line(release)
    if line.schedule == "unknown":  # what llm_api emits then: one K, no schedule
        note = (
            f"TRT-LLM {line.range} schedule semantics are UNKNOWN: no draft_len_schedule emitted, "
            f"K = {max(k for *_, k in ranges)} up to max_concurrency {max_conc}"
        )
        return {
            "line": line.name,
            "range": line.range,
            "trtllm_version": release,
            "semantics": "unknown",
            "draft_len_schedule": {},
            "max_concurrency": max_conc,
        }, [note]
    return {
        "line": line.name,
        "range": line.range,
        "trtllm_version": release,
        "semantics": line.schedule,
        "draft_len_schedule": {str(k): v for k, v in emit_schedule(ranges, line).items()},
        "max_concurrency": None if line.schedule_excludes_max_concurrency else max_conc,
    }, []
