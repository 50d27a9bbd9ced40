"""Value checks beyond types and bounds, written once without pydantic.

The schema's fields name these through `AfterValidator` (the pydantic path, with its messages), and the
fast path reads the names from its generated table (`specdeploy.profile.fast`) and calls the same
functions. Each takes a type-valid value, returns it (possibly normalised) or raises ValueError.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def known_line(value: str) -> str:
    """A TensorRT-LLM release that a contract range covers (1.2.x, the 1.3 line; 1.4 marked UNKNOWN)."""
    from specdeploy.trtllm.versions import version_line

    version_line(value)  # raises ValueError naming the known lines
    return value


def draft_len(value: int | str) -> int | str:
    if isinstance(value, int) and value < 1:
        raise ValueError("draft_len must be >= 1 or 'auto' (use mechanism: none to turn speculation off)")
    return value


def schedule(value: dict[int, int] | None) -> dict[int, int] | None:
    """Concurrency lower bounds from 1 -> draft length, sorted by concurrency."""
    if value is None:
        return None
    if not value:
        raise ValueError("schedule must not be empty")
    if any(k < 1 for k in value) or any(v < 0 for v in value.values()):
        raise ValueError("schedule keys (concurrency) must be >= 1 and values (draft length) >= 0")
    if min(value) != 1:
        raise ValueError("schedule must start at concurrency 1")
    return dict(sorted(value.items()))


def positive_sorted(value: list[int] | None) -> list[int] | None:
    """Concurrency levels or draft-length candidates: positive, deduplicated, ascending."""
    if value is None:
        return None
    if not value or any(v < 1 for v in value):
        raise ValueError("must be a non-empty list of integers >= 1")
    return sorted(set(value))


def acceptance_al(value: dict[int, float] | None) -> dict[int, float] | None:
    """Measured mean acceptance length per draft length: K >= 1, 1 <= AL <= K + 1."""
    if value is None:
        return None
    if not value or any(k < 1 or not 1.0 <= al <= k + 1 for k, al in value.items()):
        raise ValueError("acceptance_al maps a draft length K >= 1 to the mean tokens per step, "
                         "1 <= AL <= K + 1 (the bonus token included)")
    return dict(sorted(value.items()))


def acceptance_rates(value: list[float] | None) -> list[float] | None:
    """Per-position acceptance a_1, a_2, ...: in [0, 1] and non-increasing."""
    if value is None:
        return None
    if not value or any(not 0.0 <= a <= 1.0 for a in value) or any(b > a for a, b in zip(value, value[1:])):
        raise ValueError("acceptance_rates must be a non-empty, non-increasing list of shares in [0, 1]")
    return value


CHECKS: dict[str, Callable[[Any], Any]] = {
    f.__name__: f for f in (known_line, draft_len, schedule, positive_sorted, acceptance_al, acceptance_rates)
}
"""name -> check, as the generated tables spell them."""
