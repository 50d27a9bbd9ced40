"""The memory fit models TensorRT-LLM's paged KV cache: only weights that cannot load are an error (issue 16, 6)."""

from __future__ import annotations

import json
from pathlib import Path

from specdeploy.api import load_and_resolve
from specdeploy.resolve.catalog import CATALOG
from specdeploy.resolve.gpus import GPUS
from specdeploy.resolve.hub import lookup_config
from specdeploy.resolve.memory import memory_fit
from specdeploy.resolve.model_spec import ModelSpec
from tests.helpers import cli, write_profile


def _spec(name: str) -> ModelSpec:
    spec = lookup_config(name, None, online=False).spec
    assert spec is not None
    return spec


def test_h200_profile_moved_to_h100_warns_with_figures_instead_of_failing(tmp_path: Path) -> None:
    path = write_profile(tmp_path / "p.yaml", "extends: h200-eagle3\nhardware:\n  gpu: h100-sxm\n")
    resolved = load_and_resolve(str(path))  # raised ProfileError: "96.3 GiB per GPU > 80.0 GiB"
    assert resolved.fit is not None and resolved.fit.weights_fit and not resolved.fit.fits
    (warning,) = [n for n in resolved.notes if n.severity == "warning" and n.dotted == "serving.max_batch_size"]
    assert "KV cache is paged" in warning.message and "sequences of 8192 at once (max_batch_size 64)" in warning.message
    assert f"{resolved.fit.kv_tokens:,} tokens" in warning.message and resolved.fit.full_sequences < 64


def test_mla_latent_is_not_split_by_tensor_parallel() -> None:
    deepseek = _spec("deepseek-ai/DeepSeek-V3")
    one = memory_fit(deepseek, None, GPUS["h200"], quantization="fp8", tp=1, pp=1, max_batch=1, max_seq=1024)
    eight = memory_fit(deepseek, None, GPUS["h200"], quantization="fp8", tp=8, pp=1, max_batch=1, max_seq=1024)
    assert eight.kv_bytes_per_token == one.kv_bytes_per_token == deepseek.kv_bytes_per_token(2.0)
    llama = _spec("meta-llama/Llama-3.1-8B-Instruct")  # 8 KV heads: TP 2 halves them, TP 16 keeps one per GPU
    two = memory_fit(llama, None, GPUS["h200"], quantization="none", tp=2, pp=1, max_batch=1, max_seq=1024)
    sixteen = memory_fit(llama, None, GPUS["h200"], quantization="none", tp=16, pp=1, max_batch=1, max_seq=1024)
    assert two.kv_bytes_per_token == llama.kv_bytes_per_token(2.0) // 2
    assert sixteen.kv_bytes_per_token == llama.kv_bytes_per_token(2.0) // 8


def test_fp8_weights_do_not_mean_an_fp8_kv_cache() -> None:
    llama = _spec("meta-llama/Llama-3.1-8B-Instruct")
    fp8 = memory_fit(llama, None, GPUS["h100-sxm"], quantization="fp8", tp=1, pp=1, max_batch=8, max_seq=4096)
    assert fp8.kv_dtype == "bfloat16" and fp8.kv_bytes_per_token == llama.kv_bytes_per_token(2.0)


def test_fp8_kv_only_where_the_emitted_commands_ask_for_it(tmp_path: Path) -> None:
    base = {
        "target": {"model": "meta-llama/Llama-3.1-8B-Instruct", "quantization": "fp8"},
        "hardware": {"gpu": "h100-sxm"},
        "speculative": {"mechanism": "none"},
    }
    exported = tmp_path / "llama-fp8"  # the PyTorch backend runs a pre-quantized checkpoint only
    exported.mkdir()
    config = {
        **CATALOG["meta-llama/Llama-3.1-8B-Instruct"][0],
        "quantization_config": {"quant_method": "modelopt", "quant_algo": "FP8"},
    }
    (exported / "config.json").write_text(json.dumps(config))
    pytorch = load_and_resolve(
        str(write_profile(tmp_path / "p.yaml", {**base, "target": {"model": str(exported), "quantization": "fp8"}}))
    )
    engine = load_and_resolve(
        str(write_profile(tmp_path / "e.yaml", {**base, "runtime": {"backend": "tensorrt", "trtllm_version": "1.2.1"}}))
    )  # quantize.py --kv_cache_dtype fp8
    assert pytorch.fit is not None and engine.fit is not None
    assert (pytorch.fit.kv_dtype, engine.fit.kv_dtype) == ("bfloat16", "fp8")
    assert engine.fit.kv_bytes_per_token * 2 == pytorch.fit.kv_bytes_per_token


def test_an_unknown_drafter_is_unknown_not_zero() -> None:
    resolved = load_and_resolve("l40s-medusa-engine")  # the Medusa heads' config is in no catalog
    assert resolved.draft_lookup is not None and resolved.draft is None and resolved.fit is not None
    assert resolved.fit.to_dict()["draft_weights"] == "unknown" and "drafter unknown" in resolved.fit.summary()


def test_weights_that_cannot_load_are_still_an_error() -> None:
    llama70 = _spec("meta-llama/Llama-3.3-70B-Instruct")
    fit = memory_fit(llama70, None, GPUS["l40s"], quantization="none", tp=1, pp=1, max_batch=1, max_seq=1024)
    severity, message, _ = fit.problem() or ("", "", "")
    assert severity == "error" and "does not fit: weights 131.4 GiB" in message


def test_the_cli_exits_0_for_the_moved_profile(tmp_path: Path) -> None:
    path = write_profile(tmp_path / "mine.yaml", "extends: h200-eagle3\nhardware:\n  gpu: h100-sxm\n")
    code, _, err = cli("validate", str(path))
    assert code == 0, err
    assert "warning: " in err and "KV cache is paged" in err
