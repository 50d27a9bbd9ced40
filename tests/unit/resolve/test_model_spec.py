"""ModelSpec from real published config.json values, resolved through hub-layout caches offline."""

from __future__ import annotations

from pathlib import Path

import pytest

from specdeploy.resolve.catalog import CATALOG
from specdeploy.resolve.hub import lookup_config
from tests.helpers import LLAMA_31_8B_CONFIG, hub_cache_model

DEEPSEEK_V3 = CATALOG["deepseek-ai/DeepSeek-V3"][0]
QWEN3_8B = CATALOG["Qwen/Qwen3-8B"][0]
MISTRAL_7B = {  # huggingface.co/mistralai/Mistral-7B-v0.1/config.json
    "architectures": ["MistralForCausalLM"],
    "model_type": "mistral",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "vocab_size": 32000,
    "max_position_embeddings": 32768,
    "sliding_window": 4096,
    "torch_dtype": "bfloat16",
}
LLAMA_70B = {
    **LLAMA_31_8B_CONFIG,
    "hidden_size": 8192,
    "intermediate_size": 28672,
    "num_attention_heads": 64,
    "num_hidden_layers": 80,
}
EAGLE3 = CATALOG["yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"][0]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    return tmp_path / "hub"


@pytest.mark.parametrize(
    "repo, config, params_b, g, kv_bytes",
    [
        ("org/llama-8b", LLAMA_31_8B_CONFIG, 8.03, 4, 32 * 2 * 8 * 128 * 2),
        ("org/llama-70b", LLAMA_70B, 70.55, 8, 80 * 2 * 8 * 128 * 2),
        ("org/qwen3-8b", QWEN3_8B, 8.19, 4, 36 * 2 * 8 * 128 * 2),
        ("org/mistral-7b", MISTRAL_7B, 7.24, 4, 32 * 2 * 8 * 128 * 2),
        ("org/deepseek-v3", DEEPSEEK_V3, 671.0, 1, 61 * (512 + 64) * 2),
    ],
)
def test_spec_from_hub_cache(cache: Path, repo: str, config: dict, params_b: float, g: int, kv_bytes: int) -> None:
    hub_cache_model(cache, repo, config)
    found = lookup_config(repo)
    spec = found.spec
    assert spec is not None and found.origin.startswith("hf-cache:")
    assert spec.parameter_count() / 1e9 == pytest.approx(params_b, rel=0.01)
    assert spec.group_size == g
    assert spec.kv_bytes_per_token() == kv_bytes


def test_deepseek_moe_mla_mtp_facts(cache: Path) -> None:
    hub_cache_model(cache, "deepseek-ai/DeepSeek-V3", DEEPSEEK_V3)
    spec = lookup_config("deepseek-ai/DeepSeek-V3").spec
    assert spec is not None and spec.is_moe and spec.is_mla and spec.mtp_layers == 1
    assert spec.parameter_count(active_only=True) / 1e9 == pytest.approx(37.5, rel=0.02)
    assert spec.weight_bytes("fp8") == spec.parameter_count()


def test_eagle3_drafter_and_sliding_window(cache: Path) -> None:
    hub_cache_model(cache, "org/eagle3", EAGLE3)
    hub_cache_model(cache, "org/mistral", MISTRAL_7B)
    eagle = lookup_config("org/eagle3").spec
    assert eagle is not None and eagle.draft_vocab == 32000 and eagle.layers == 1
    assert lookup_config("org/mistral").spec.sliding_window == 4096


def test_revision_and_commit_pinning(cache: Path) -> None:
    hub_cache_model(cache, "org/m", LLAMA_31_8B_CONFIG, revision="b" * 40)
    assert lookup_config("org/m", "b" * 40).spec is not None
    assert lookup_config("org/m", "c" * 40).spec is None  # not in the cache, not in the catalog


def test_cache_beats_catalog(cache: Path) -> None:
    hub_cache_model(cache, "meta-llama/Llama-3.1-8B-Instruct", {**LLAMA_31_8B_CONFIG, "num_hidden_layers": 2})
    spec = lookup_config("meta-llama/Llama-3.1-8B-Instruct").spec
    assert spec is not None and spec.layers == 2


def test_unusable_config_says_why(tmp_path: Path) -> None:
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text('{"model_type": "x"}')
    found = lookup_config(str(tmp_path / "m"))
    assert found.spec is None and "hidden_size" in (found.reason or "")
