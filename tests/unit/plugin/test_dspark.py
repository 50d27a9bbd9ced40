"""DSpark joins the mechanisms: registered like the others, refused on TensorRT-LLM with the reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from specdeploy.plugin.registry import registry
from tests.helpers import profile_data, profile_problems


@pytest.mark.parametrize("runtime", [{"backend": "pytorch", "trtllm_version": "1.3.0"},
                                     {"backend": "tensorrt", "trtllm_version": "1.2.1"}])
def test_no_tensorrt_llm_release_runs_dspark_and_validation_says_why(tmp_path: Path, runtime: dict) -> None:
    found = profile_problems(tmp_path, profile_data(runtime=runtime, speculative={"mechanism": "dspark"}))
    assert "speculative.mechanism: no TensorRT-LLM release has DSpark: DSparkDecodingConfig is on its main " \
           "branch only (1.3.0rc27, the newest release read, has MTP, Eagle3, NGram, DraftTarget, PARD, DFlash " \
           "and SA)" in found


def test_dspark_runs_on_vllm_0_32_with_an_optional_drafter() -> None:
    dspark = registry()["dspark"]
    assert dspark.supported() == {"vllm": ("0.32",)}
    assert not dspark.needs_draft_model  # DeepSeek-V4 ships its DSpark stages inside the target checkpoint
    assert dspark.Options.model_validate({"draft_topk": 8}).draft_topk == 8
