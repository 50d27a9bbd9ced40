"""DSpark joins the mechanisms: vLLM 0.32, and TensorRT-LLM's PyTorch backend from 1.3.0rc23 (`DSparkDecodingConfig`,
decoding_type DSpark); refused, with the release that has it, on 1.2.1, on the range before rc23 and on engines."""

from __future__ import annotations

from pathlib import Path

import pytest

from specdeploy.api import load_and_resolve
from specdeploy.engines.trtllm.llm_api import llm_api_options
from specdeploy.engines.trtllm.tables import check_llm_api_options, table_for
from specdeploy.plugin.registry import registry
from tests.helpers import profile_data, profile_problems, write_profile

WHERE = "specdeploy emits it for 1.3.0rc23 or a later 1.3 release (see specdeploy mechanisms)"


@pytest.mark.parametrize(("version", "release_range"), [("1.3.0rc23", "1.3.0rc23-rc26"), ("1.3.0", "1.3.0rc27+")])
def test_tensorrt_llm_1_3_emits_dspark_as_its_contract_table_has_it(
    tmp_path: Path, version: str, release_range: str
) -> None:
    data = profile_data(
        "Qwen/Qwen3-8B",
        runtime={"backend": "pytorch", "trtllm_version": version},
        speculative={"mechanism": "dspark", "draft_len": 5},
    )
    resolved = load_and_resolve(str(write_profile(tmp_path / "p.yaml", data)))
    options = llm_api_options(resolved, draft_len=5)
    assert options["speculative_config"] == {"decoding_type": "DSpark", "max_draft_len": 5}
    assert resolved.line.range == release_range and check_llm_api_options(options, table_for(resolved.line)) == []


@pytest.mark.parametrize(("version", "release_range"), [("1.2.1", "1.2.x"), ("1.3.0rc22", "1.3.0rc14-rc22")])
def test_earlier_releases_refuse_dspark_naming_the_one_that_has_it(
    tmp_path: Path, version: str, release_range: str
) -> None:
    found = profile_problems(
        tmp_path,
        profile_data(runtime={"backend": "pytorch", "trtllm_version": version}, speculative={"mechanism": "dspark"}),
    )
    assert f"speculative.mechanism: dspark is not in TensorRT-LLM {version} (range {release_range}): {WHERE}" in found


def test_tensorrt_llm_engines_refuse_dspark_and_say_why(tmp_path: Path) -> None:
    found = profile_problems(
        tmp_path,
        profile_data(runtime={"backend": "tensorrt", "trtllm_version": "1.2.1"}, speculative={"mechanism": "dspark"}),
    )
    assert (
        "speculative.mechanism: TensorRT-LLM engines (trtllm-build) have no DSpark: DSparkDecodingConfig "
        "supports the PyTorch backend only (1.3.0rc23), and the engine backend ends with 1.2.x" in found
    )


@pytest.mark.parametrize(("option", "value"), [("draft_topk", 8), ("adaptive_verification", True)])
def test_vllm_only_options_are_refused_on_tensorrt_llm(tmp_path: Path, option: str, value: object) -> None:
    found = profile_problems(
        tmp_path,
        profile_data(
            runtime={"backend": "pytorch", "trtllm_version": "1.3.0"},
            speculative={"mechanism": "dspark", "options": {option: value}},
        ),
    )
    assert found == [
        f"speculative.options.{option}: {option} is a vLLM DSpark option: TensorRT-LLM's "
        "DSparkDecodingConfig has no such field (it has mask_token_id, target_layer_ids, block_size, "
        "markov_rank, markov_head_type; 1.3.0rc23)"
    ]


def test_dspark_runs_on_vllm_0_32_and_tensorrt_llm_1_3_with_an_optional_drafter() -> None:
    dspark = registry()["dspark"]
    assert dspark.supported() == {"vllm": ("0.32",), "pytorch": ("1.3",)}
    assert not dspark.needs_draft_model  # DeepSeek-V4 ships its DSpark stages inside the target checkpoint
    assert dspark.Options.model_validate({"draft_topk": 8}).draft_topk == 8
