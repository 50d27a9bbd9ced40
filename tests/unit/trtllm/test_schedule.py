"""Schedule conversion: canonical ranges -> 1.2.1 lower-bound keys / 1.3 upper-bound keys (docs/design/trtllm.md §5)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specdeploy.engines.trtllm.schedule import emit_schedule
from specdeploy.engines.trtllm.versions import LINE_1_2, LINE_1_3, VersionLine, version_line
from specdeploy.schedule import canonical, draft_len_at, lower_bounds, ranges_from_lower_bounds


def _lookup_lower(sched: dict[int, int], bs: int) -> int:
    return sched[max(k for k in sched if k <= bs)]


def _lookup_upper(sched: dict[int, int], bs: int) -> int:
    above = [k for k in sched if k >= bs]
    return sched[min(above)] if above else 0


def test_reference_examples() -> None:
    ranges = [(1, 3, 4), (4, 7, 2)]
    assert emit_schedule(ranges, LINE_1_2) == {1: 4, 4: 2, 8: 0}
    assert emit_schedule([(1, 4, 4), (5, 8, 2), (9, 32, 1)], LINE_1_3) == {4: 4, 8: 2, 32: 1}


def test_profile_map_closed_by_max_concurrency() -> None:
    assert canonical({1: 4, 8: 2}, max_concurrency=16) == [(1, 7, 4), (8, 16, 2)]
    assert emit_schedule({1: 4, 8: 2}, LINE_1_2, max_concurrency=16) == {1: 4, 8: 2, 17: 0}
    assert emit_schedule({1: 4, 8: 2}, LINE_1_3, max_concurrency=16) == {7: 4, 16: 2}
    assert emit_schedule({1: 4, 8: 2, 32: 0}, LINE_1_3, max_batch_size=64) == {7: 4, 31: 2}


@pytest.mark.parametrize("line", [LINE_1_2, LINE_1_3], ids=["1.2", "1.3"])
def test_first_key_must_carry_the_largest_k(line: VersionLine) -> None:
    """1.2: schedule[1] == max_draft_len; 1.3 (P14/P23): schedule[smallest key] == max_draft_len."""
    with pytest.raises(ValueError) as err:
        emit_schedule({1: 2, 8: 4}, line, max_batch_size=16)
    assert "smallest schedule key's K == max_draft_len" in str(err.value)


def test_unknown_semantics_refuse_a_schedule() -> None:
    with pytest.raises(ValueError) as err:
        emit_schedule({1: 4}, version_line("1.3.0rc5"), max_batch_size=16)
    assert "UNKNOWN" in str(err.value)


def test_ranges_must_be_contiguous() -> None:
    with pytest.raises(ValueError):
        canonical([(1, 3, 4), (5, 8, 2)])


@given(st.lists(st.tuples(st.integers(1, 8), st.integers(0, 6)), min_size=1, max_size=6), st.integers(1, 64))
def test_both_lines_agree_with_the_canonical_ranges(steps: list[tuple[int, int]], extra: int) -> None:
    ranges, lo = [], 1
    for width, k in steps:
        ranges.append((lo, lo + width - 1, k))
        lo += width
    ranges[0] = (1, ranges[0][1], max(k for *_, k in ranges))  # 1.2.1: schedule[1] is the largest K
    lower, upper = emit_schedule(ranges, LINE_1_2), emit_schedule(ranges, LINE_1_3)
    assert min(lower) == 1
    for bs in range(1, ranges[-1][1] + extra + 1):
        assert _lookup_lower(lower, bs) == draft_len_at(ranges, bs)
        assert _lookup_upper(upper, bs) == draft_len_at(ranges, bs)
    assert ranges_from_lower_bounds(lower_bounds(ranges), ranges[-1][1]) == ranges
