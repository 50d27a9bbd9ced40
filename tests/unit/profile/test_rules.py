"""Cross-field rules: the compatibility matrix, limits, and mechanism-specific checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from specdeploy.api import load_and_resolve
from tests.helpers import LLAMA_31_8B_CONFIG, local_model, profile_data, profile_problems, write_profile


@pytest.mark.parametrize(
    "runtime, speculative, expected",
    [
        (
            {"backend": "pytorch"},
            {"mechanism": "medusa", "draft_model": "x/medusa"},
            "medusa does not run on backend 'pytorch'",
        ),
        (
            {"backend": "tensorrt", "trtllm_version": "1.3.0"},
            {"mechanism": "draft_target", "draft_model": "meta-llama/Llama-3.2-1B-Instruct"},
            "has no engine backend",
        ),
        (
            {"backend": "pytorch", "trtllm_version": "1.2.1"},
            {"mechanism": "dflash", "draft_model": "z-lab/Qwen3-8B-DFlash-b16"},
            "dflash does not run on backend 'pytorch' with TensorRT-LLM 1.2.1",
        ),
        (
            {"backend": "tensorrt", "trtllm_version": "1.2.1"},
            {"mechanism": "lookahead", "draft_len": 5},
            "fixed by (W, N, G) = 15",
        ),
        ({"backend": "pytorch"}, {"mechanism": "mtp"}, "has no MTP layers"),
        ({"backend": "pytorch"}, {"mechanism": "eagle3"}, "eagle3 needs a draft_model"),
        (
            {"backend": "pytorch"},
            {"mechanism": "ngram", "draft_model": "meta-llama/Llama-3.2-1B-Instruct"},
            "does not use a draft_model",
        ),
        (
            {"backend": "pytorch"},
            {"mechanism": "eagle3", "draft_model": "meta-llama/Llama-3.2-1B-Instruct"},
            "EAGLE-3 drafter hidden size 2048 does not match the target's 4096",
        ),
        (
            {"backend": "pytorch"},
            {"mechanism": "draft_target", "draft_model": "mistralai/Mistral-7B-Instruct-v0.3"},
            "drafter vocabulary (32768) differs from the target's (128256)",
        ),
        (
            {"backend": "pytorch"},
            {"mechanism": "ngram", "draft_len": 4, "schedule": {1: 6, 8: 2}},
            "draft length 6 > draft_len 4",
        ),
    ],
)
def test_compatibility_matrix(tmp_path: Path, runtime: dict, speculative: dict, expected: str) -> None:
    found = profile_problems(tmp_path, profile_data(runtime=runtime, speculative=speculative))
    assert any(expected in p for p in found), found


def test_tp_pp_and_tokens_and_context(tmp_path: Path) -> None:
    found = profile_problems(
        tmp_path,
        profile_data(
            hardware={"gpu": "h200", "count": 2, "tensor_parallel": 2, "pipeline_parallel": 2},
            speculative={"mechanism": "ngram", "draft_len": 4},
            serving={"max_batch_size": 64, "max_num_tokens": 256, "max_seq_len": 200000},
        ),
    )
    assert any("tensor_parallel x pipeline_parallel = 4 > count 2" in p for p in found)
    assert any("max_num_tokens 256 < max_batch_size x (1 + draft_len) = 64 x 5 = 320" in p for p in found)
    assert any("max_seq_len 200000 exceeds the model's context 131072" in p for p in found)


def test_memory_fit_names_numbers_and_what_to_lower(tmp_path: Path) -> None:
    found = profile_problems(tmp_path, profile_data("meta-llama/Llama-3.3-70B-Instruct", hardware={"gpu": "l40s"}))
    (message,) = found
    assert "does not fit: weights 131.4 GiB" in message and "> 48.0 GiB" in message


def test_fp8_needs_fp8_hardware(tmp_path: Path) -> None:
    found = profile_problems(
        tmp_path,
        {
            "target": {"model": "meta-llama/Llama-3.1-8B-Instruct", "quantization": "fp8"},
            "hardware": {"gpu": "a100-80gb"},
        },
    )
    assert any("no FP8 tensor cores" in p for p in found)


def test_local_config_wins_over_catalog(tmp_path: Path) -> None:
    folder = local_model(tmp_path / "llama", {**LLAMA_31_8B_CONFIG, "max_position_embeddings": 4096})
    found = profile_problems(tmp_path, profile_data(str(folder), serving={"max_seq_len": 8192}))
    assert found == ["serving.max_seq_len: max_seq_len 8192 exceeds the model's context 4096"]


def test_unknown_model_skips_model_checks_and_says_why(tmp_path: Path) -> None:
    path = write_profile(tmp_path / "p.yaml", profile_data("someone/unknown-model", serving={"max_seq_len": 10**6}))
    resolved = load_and_resolve(str(path))
    skipped = [n for n in resolved.notes if n.severity == "skipped"]
    assert any(
        "model-dependent checks skipped" in n.message and "not in the Hugging Face cache" in n.message for n in skipped
    )
    assert resolved.fit is None


def test_reference_backend_rules(tmp_path: Path) -> None:
    found = profile_problems(
        tmp_path,
        {
            "target": {"model": "HuggingFaceTB/SmolLM2-135M-Instruct"},
            "hardware": {"gpu": "h200"},
            "runtime": {"backend": "reference"},
            "speculative": {"mechanism": "medusa", "draft_model": "x/y"},
        },
    )
    assert any("reference backend runs on CPU" in p for p in found)
    assert any("medusa does not run on backend 'reference'" in p for p in found)


def test_the_reference_model_may_be_non_decoupled_but_then_cannot_stream(tmp_path: Path) -> None:
    """Not decoupled it answers unary gRPC, /infer and /generate (perf_analyzer, GenAI-Perf without --streaming);
    before, `triton.decoupled: false` was refused for the reference backend. Streaming still needs decoupled."""
    base = {
        "target": {"model": "HuggingFaceTB/SmolLM2-135M-Instruct"},
        "hardware": {"gpu": "cpu"},
        "runtime": {"backend": "reference"},
        "triton": {"decoupled": False},
        "speculative": {"mechanism": "ngram"},
    }
    assert not [p for p in profile_problems(tmp_path, base) if "decoupled" in p]
    streaming = profile_problems(tmp_path, {**base, "serving": {"streaming": True}})
    assert any("streaming needs a decoupled Triton model" in p for p in streaming)


def test_eagle3_layers_to_capture_is_flagged_as_ignored_on_the_reference_backend(tmp_path: Path) -> None:
    """The reference runtime's head reads the layers it was trained on: a silently ignored option would mislead."""
    base = {
        "target": {"model": "HuggingFaceTB/SmolLM2-135M-Instruct"},
        "hardware": {"gpu": "cpu"},
        "runtime": {"backend": "reference"},
        "speculative": {"mechanism": "eagle3", "draft_model": "specdeploy/smollm2-135m-eagle3"},
    }
    assert not load_and_resolve(str(write_profile(tmp_path / "a.yaml", base))).notes
    base["speculative"]["options"] = {"layers_to_capture": [1, 14, 29]}
    notes = load_and_resolve(str(write_profile(tmp_path / "b.yaml", base))).notes
    assert [(n.dotted, n.severity) for n in notes] == [("speculative.options.layers_to_capture", "warning")]
    assert "ignored on the reference backend" in notes[0].message
