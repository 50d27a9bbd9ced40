"""The self-check's pieces that need no vLLM: configuration-only folders and where a refusal is located."""

from __future__ import annotations

import json
from pathlib import Path

from specdeploy.engines.vllm.contract import lines
from specdeploy.engines.vllm.emit import ServeLimits, emit
from specdeploy.engines.vllm.selfcheck import config_folder, locate

LINE = lines()["0.32"]


def test_a_config_folder_drops_the_gguf_quantization_vllm_refuses(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "config.json").write_text(
        json.dumps({"model_type": "llama", "quantization_config": {"quant_method": "gguf", "gguf_file": "m.gguf"}})
    )
    (source / "tokenizer.json").write_text("{}")
    (source / "model.safetensors").write_text("weights")
    out = config_folder(source, tmp_path / "out")
    assert json.loads((out / "config.json").read_text()) == {"model_type": "llama"}
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "tokenizer.json"]


def test_a_config_folder_keeps_a_quantization_vllm_knows(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "config.json").write_text(json.dumps({"quantization_config": {"quant_method": "fp8"}}))
    out = config_folder(source, tmp_path / "out")
    assert json.loads((out / "config.json").read_text())["quantization_config"] == {"quant_method": "fp8"}


def test_a_refusal_is_located_at_the_first_emitted_key_it_names() -> None:
    out = emit("ngram", {"max_matching_ngram_size": 2}, 3, target="/t", limits=ServeLimits(max_num_seqs=8), line=LINE)
    error = "ValidationError: Value error, prompt_lookup_max=2 must be >= prompt_lookup_min=5"
    assert locate(error, out, LINE) == ("speculative", "options", "max_matching_ngram_size")
    assert locate("ValueError: argument --max-num-seqs: invalid int value", out, LINE) == ("serving", "max_batch_size")


def test_a_known_phrase_of_the_release_wins_over_the_words() -> None:
    out = emit("mtp", {}, 1, target="/t", limits=ServeLimits(max_num_seqs=8), line=LINE)
    assert locate("NotImplementedError: Unsupported speculative method: 'mtp'", out, LINE) == (
        "speculative",
        "mechanism",
    )
    assert locate("num_speculative_tokens was provided but without speculative model.", out, LINE) == (
        "speculative",
        "draft_model",
    )
    assert locate("something else entirely", out, LINE) == ("speculative",)
