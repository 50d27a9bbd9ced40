"""TensorRT-LLM's PyTorch backend quantizes nothing: it runs checkpoints Model Optimizer already quantized (its 1.2.1
docs, features/quantization, 'Running Pre-quantized Models'). `target.quantization` must be what the checkpoint
loads as, so the memory fit, KV cache and tuning figures are those of what serves (issue 30, item 25)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from specdeploy.api import load_and_resolve, validate
from specdeploy.issues import ProfileError

LLAMA_70B = "meta-llama/Llama-3.3-70B-Instruct"
SHIPPED = Path(__file__).resolve().parents[3] / "profiles" / "h100" / "h100-draft-target.yaml"


def _fp8_pair(model: str, quantization: str = "fp8") -> dict[str, Any]:
    return {
        "target": {"model": model, "quantization": quantization},
        "hardware": {"gpu": "h100-sxm", "count": 2, "tensor_parallel": 2},
        "runtime": {"trtllm_version": "1.2.1", "backend": "pytorch"},
        "speculative": {"mechanism": "draft_target", "draft_len": 4, "draft_model": "meta-llama/Llama-3.2-1B-Instruct"},
        "serving": {"max_batch_size": 32, "max_seq_len": 8192},
    }


def test_pytorch_backend_refuses_fp8_of_an_unquantized_checkpoint(resolve_case: Any) -> None:
    """The BF16 checkpoint would load in BF16 (~65.7 GiB a GPU at TP 2), not the 32.9 GiB planned for FP8."""
    with pytest.raises(ProfileError) as err:
        resolve_case("bf16", _fp8_pair(LLAMA_70B))
    (issue,) = [i for i in err.value.issues if i.path == ("target", "quantization")]
    assert "65.7 GiB" in issue.message and "32.9 GiB" in issue.message and "Pre-quantized" in issue.message
    assert issue.line is not None and "fp8 checkpoint" in (issue.suggestion or "")


def test_a_pre_quantized_checkpoint_plans_as_it_loads(resolve_case: Any) -> None:
    resolved = resolve_case("fp8", _fp8_pair("nvidia/Llama-3.3-70B-Instruct-FP8"))
    assert resolved.target is not None and resolved.target.quantization == "fp8"
    assert resolved.fit is not None and round(resolved.fit.weights / 1024**3, 1) == 32.9


def test_a_quantized_folder_named_unquantized_is_refused(resolve_case: Any, tmp_path: Path) -> None:
    """A Model-Optimizer export that says so only in hf_quant_config.json is still an FP8 checkpoint."""
    folder = tmp_path / "llama-fp8"
    folder.mkdir()
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 2048,
        "intermediate_size": 8192,
        "num_attention_heads": 32,
        "num_hidden_layers": 16,
        "num_key_value_heads": 8,
        "vocab_size": 128256,
        "torch_dtype": "bfloat16",
    }
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "hf_quant_config.json").write_text(json.dumps({"quantization": {"quant_algo": "FP8"}}))
    data = {**_fp8_pair(str(folder), "none"), "speculative": {"mechanism": "none"}}
    with pytest.raises(ProfileError) as err:
        resolve_case("q", data)
    (issue,) = [i for i in err.value.issues if i.path == ("target", "quantization")]
    assert "fp8 checkpoint" in issue.message and issue.suggestion == "set target.quantization: fp8"


def test_shipped_draft_target_profile_names_a_pre_quantized_target() -> None:
    (result,) = validate([str(SHIPPED)])
    assert result.ok, result
    resolved = load_and_resolve(str(SHIPPED))
    assert resolved.target is not None and resolved.target.quantization == "fp8"
