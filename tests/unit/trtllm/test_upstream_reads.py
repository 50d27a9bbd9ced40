"""What TensorRT-LLM 1.2.1 does with what specdeploy emits, read at its public sources (issue 30, items 27-29):
trtllm-build gives a ReDrafter engine beams x K draft tokens, the EAGLE converter takes
--max_non_leaves_per_layer, and one-model drafting ignores a draft_len_schedule."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from specdeploy.engines.trtllm.actions import llm_api_files
from specdeploy.engines.trtllm.tables import check_argv, table_for
from specdeploy.engines.trtllm.versions import LINE_1_2, UNCONFIRMED
from specdeploy.plan.planner import make_plan
from specdeploy.render.actions import render_resolved
from specdeploy.render.context import build_context
from tests.helpers import needs_triton_schema
from tests.unit.trtllm.cases import ENGINE, PYTORCH

T12 = table_for(LINE_1_2)


def _steps(resolved: Any) -> dict[str, Any]:
    return {s.id: s for s in make_plan(resolved).steps}


def test_redrafter_engine_gets_beams_times_draft_len(resolve_case: Any) -> None:
    """trtllm-build sets max_draft_len = redrafter_num_beams x redrafter_draft_len_per_beam (builder.py @ 1.2.1):
    the emitted flag, the plan's step and the rendered repository's manifest say that number."""
    resolved = resolve_case("r", ENGINE["tensorrt-1.2.1-redrafter"])  # K = 4, num_beams default 5
    steps = _steps(resolved)
    attach = list(steps["convert.target"].argv)
    assert attach[attach.index("--redrafter_draft_len_per_beam") + 1] == "4"
    build = list(steps["engine.target"].argv)
    assert build[build.index("--max_draft_len") + 1] == "20" and steps["engine.target"].params["max_draft_len"] == 20
    assert int(build[build.index("--max_num_tokens") + 1]) >= 16 * 21
    assert check_argv(build, T12) == []
    assert build_context(resolved).manifest.engine_max_draft_len == 20  # type: ignore[union-attr]


def test_eagle_converter_gets_max_non_leaves(resolve_case: Any) -> None:
    """examples/eagle/convert_checkpoint.py @ 65b31db1 has --max_non_leaves_per_layer (default 10)."""
    base = ENGINE["tensorrt-1.2.1-eagle"]
    data = {**base, "speculative": {**base["speculative"], "options": {"max_non_leaves_per_layer": 5}}}
    resolved = resolve_case("e", data)
    argv = list(_steps(resolved)["convert.target"].argv)
    assert argv[argv.index("--max_non_leaves_per_layer") + 1] == "5" and check_argv(argv, T12) == []
    assert not [n for n in resolved.notes if "max_non_leaves" in str(n.path)]
    default = list(_steps(resolve_case("d", base))["convert.target"].argv)
    assert default[default.index("--max_non_leaves_per_layer") + 1] == "10"
    assert "convert.eagle_max_non_leaves" not in UNCONFIRMED


def test_ngram_matching_default_is_the_1_2_1_one() -> None:
    """NGramDecodingConfig.max_matching_ngram_size is 0 at 1.2.1 (its llm_args module page), so the emitted YAML
    always names the profile's value."""
    field = T12["decoding"]["NGram"]["fields"]["max_matching_ngram_size"]
    assert field["default"] == 0 and "1.2.1/_modules/tensorrt_llm/llmapi/llm_args.html" in field["source"]


def test_visualize_network_takes_a_directory() -> None:
    """trtllm-build --visualize_network <dir> (1.2.1 commands/trtllm-build page), not a flag."""
    assert check_argv(["trtllm-build", "--checkpoint_dir", "c", "--visualize_network", "onnx/"], T12) == []
    assert check_argv(["trtllm-build", "--checkpoint_dir", "c", "--visualize_network"], T12) == [
        "trtllm-build: --visualize_network needs a value"
    ]


@needs_triton_schema  # renders Triton's model.yaml
@pytest.mark.parametrize(
    ("case", "said"),
    [
        ("pytorch-1.2.1-eagle3-schedule", True),
        ("pytorch-1.2.1-eagle3-two-model-schedule", False),
        ("pytorch-1.3.0-eagle3-schedule", False),
    ],
)
def test_one_model_schedule_is_said_to_be_ignored(resolve_case: Any, tmp_path: Path, case: str, said: bool) -> None:
    """1.2.1's one-model path does not support dynamic draft lengths (its features/speculative-decoding page):
    `plan` (the profile's notes) and the emitted YAML (llm_api_options.yaml, Triton's model.yaml) say so where a
    schedule is emitted for it."""
    resolved = resolve_case(case.replace(".", "_"), PYTORCH[case])
    notes = [n for n in resolved.notes if "dynamic draft lengths" in n.message]
    texts, _ = llm_api_files(resolved, {})
    render_resolved(resolved, tmp_path / "repo")
    comment = "# draft_len_schedule: TensorRT-LLM 1.2.1's one-model"
    for text in (texts["llm_api_options.yaml"], (tmp_path / "repo" / "tensorrt_llm/1/model.yaml").read_text()):
        assert "draft_len_schedule:" in text and (comment in text) == said
    assert bool(notes) == said
    if said:
        assert notes[0].path == ("speculative", "schedule") and notes[0].severity == "warning"
