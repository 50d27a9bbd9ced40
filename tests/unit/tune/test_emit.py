"""The tuned decisions emitted per TRT-LLM line: lower bounds with key 1 for 1.2.1, upper bounds for 1.3,
max_concurrency where speculation stops; 1.2's schedule[1] = max_draft_len rule; all-off."""

from __future__ import annotations

from specdeploy.tune.book import Decision
from specdeploy.tune.emit import schedule_of


def decisions(ks: dict[int, int]) -> dict[int, Decision]:
    return {c: Decision(c, k, 1.0, 1.0, "") for c, k in ks.items()}


def test_lower_bounds_for_1_2_1_and_upper_bounds_for_1_3() -> None:
    tuned = decisions({1: 4, 2: 4, 4: 3, 8: 2, 16: 0, 32: 0})
    old = schedule_of(tuned, max_batch_size=32, trtllm_version="1.2.1")
    assert old["schedule"] == {"1": 4, "4": 3, "8": 2} and old["max_concurrency"] == 15
    assert old["ranges"] == [[1, 3, 4], [4, 7, 3], [8, 15, 2]]
    assert old["emitted"]["draft_len_schedule"] == {"1": 4, "4": 3, "8": 2, "16": 0}
    new = schedule_of(tuned, max_batch_size=32, trtllm_version="1.3.0")
    assert new["emitted"]["draft_len_schedule"] == {"3": 4, "7": 3, "15": 2}
    assert new["draft_len"] == old["draft_len"] == 4


def test_no_extrapolation_above_the_largest_tuned_concurrency() -> None:
    out = schedule_of(decisions({1: 3, 8: 2}), max_batch_size=64, trtllm_version="1.3.0")
    assert out["max_concurrency"] == 8 and out["emitted"]["draft_len_schedule"] == {"7": 3, "8": 2}
    assert any("not extrapolated" in n for n in out["notes"])


def test_both_lines_need_the_largest_k_at_the_smallest_key() -> None:
    """1.2.1: schedule[1] == max_draft_len; 1.3 (rc14+): schedule[smallest key] == max_draft_len (issue #15)."""
    out = schedule_of(decisions({1: 2, 8: 5, 64: 3}), max_batch_size=64, trtllm_version="1.2.1")
    assert out["schedule"] == {"1": 2, "8": 2, "64": 2} and "clamped" in out["notes"][0]
    new = schedule_of(decisions({1: 2, 8: 5, 64: 3}), max_batch_size=64, trtllm_version="1.3.0")
    assert new["emitted"]["draft_len_schedule"] == {"7": 2, "63": 2, "64": 2} and "clamped" in new["notes"][0]


def test_speculation_off_everywhere() -> None:
    out = schedule_of(decisions({1: 0, 4: 0}), max_batch_size=8, trtllm_version="1.2.1")
    assert out["speculation"] is False and out["schedule"] == {"1": 0} and out["draft_len"] == 0
