"""Draft-length schedules in one canonical form: contiguous ranges `[(bs_lo, bs_hi, K), ...]` starting at batch 1.

The profile writes lower bounds `{concurrency_lo: K}`; an engine converts the canonical form to its own spelling
(TensorRT-LLM's `draft_len_schedule`: `specdeploy.engines.trtllm.schedule.emit_schedule`; docs/design/trtllm.md §5).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

Range = tuple[int, int, int]
Schedule = Mapping[int, int] | Sequence[Sequence[int]]
"""A draft-length schedule: `{concurrency_lo: K}` lower bounds, or canonical `[lo, hi, K]` ranges."""


def ranges_from_lower_bounds(schedule: Mapping[int, int], upper: int) -> list[Range]:
    """`{1: 4, 8: 2}` with upper 32 -> [(1, 7, 4), (8, 32, 2)]; `upper` closes the last range."""
    keys = sorted(int(k) for k in schedule)
    if not keys or keys[0] != 1:
        raise ValueError("a schedule must start at concurrency 1")
    ranges = []
    for i, lo in enumerate(keys):
        hi = keys[i + 1] - 1 if i + 1 < len(keys) else max(upper, lo)
        ranges.append((lo, hi, int(schedule[lo])))
    return check_ranges(ranges)


def lower_bounds(ranges: Sequence[Range]) -> dict[int, int]:
    """Canonical ranges -> the profile's `{bs_lo: K}` form (what `specdeploy.lock` stores)."""
    return {lo: k for lo, _, k in check_ranges(ranges)}


def check_ranges(ranges: Sequence[Sequence[int]]) -> list[Range]:
    """Validate: contiguous from 1, lo <= hi, K >= 0; returns them as tuples."""
    out: list[Range] = []
    expected = 1
    for item in ranges:
        lo, hi, k = (int(v) for v in item)
        if lo != expected or hi < lo or k < 0:
            raise ValueError(f"schedule ranges must be contiguous from 1 with lo <= hi and K >= 0; got {list(ranges)}")
        out.append((lo, hi, k))
        expected = hi + 1
    if not out:
        raise ValueError("a schedule needs at least one range")
    return out


def draft_len_at(ranges: Sequence[Range], batch: int) -> int:
    """K used at this batch size; 0 (no speculation) above the last range."""
    return next((k for lo, hi, k in ranges if lo <= batch <= hi), 0)


def canonical(
    schedule: Schedule, *, max_concurrency: int | None = None, max_batch_size: int | None = None
) -> list[Range]:
    """Ranges from either form; a lower-bound map is closed at max_concurrency, else max_batch_size."""
    if isinstance(schedule, Mapping):
        upper = max_concurrency or max_batch_size
        if upper is None:
            raise ValueError("a lower-bound schedule needs max_concurrency or max_batch_size to close its last range")
        ranges = ranges_from_lower_bounds(schedule, upper)
    else:
        ranges = check_ranges(schedule)
    if max_concurrency is not None:  # speculation stops above max_concurrency
        ranges = [(lo, min(hi, max_concurrency), k) for lo, hi, k in ranges if lo <= max_concurrency]
    return ranges


def max_draft_len(schedule: Schedule) -> int:
    """The largest K a schedule uses (the buffers TRT-LLM must size)."""
    if isinstance(schedule, Mapping):
        return max(int(v) for v in schedule.values())
    return max(int(r[2]) for r in schedule)
