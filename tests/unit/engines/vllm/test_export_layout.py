"""The exports vLLM loads, checked without vLLM: what each folder holds and the layer-0 attention that only sees
its own position."""

from __future__ import annotations

import json
import math

import pytest

torch = pytest.importorskip("torch", reason="the exports are torch tensors: the reference extra")


def test_layer0_attention_sees_only_its_own_position() -> None:
    from specdeploy.engines.vllm.eagle3_layout import CONTEXT, MIN_GAP, local_attention_bias

    heads, head_dim, theta = 9, 64, 100000.0
    q, k = local_attention_bias(heads, head_dim, theta)
    half = head_dim // 2
    freqs = theta ** (-torch.arange(half, dtype=torch.float64) * 2 / head_dim)

    def rotate(v: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:  # neox style: dims i and i + half pair up
        a, b = v[:half].double(), v[half:head_dim].double()
        ang = pos[:, None] * freqs[None, :]
        return torch.cat([a * ang.cos() - b * ang.sin(), b * ang.cos() + a * ang.sin()], 1)

    offsets = torch.arange(0, CONTEXT + 1, dtype=torch.float64)
    scores = (rotate(q, offsets[-1:]) * rotate(k, offsets[-1] - offsets)).sum(1) / math.sqrt(head_dim)
    assert (scores[0] - scores[1:]).min().item() >= MIN_GAP * (1 - 1e-6)


@pytest.mark.slow
def test_draft_model_scores_only_its_vocabulary() -> None:
    from safetensors.torch import load_file

    from specdeploy.engines.reference.runtime.models import DRAFTER_DIR
    from specdeploy.engines.reference.runtime.shared_drafter import DRAFT_VOCAB_KEY
    from specdeploy.engines.vllm.export import draft_model_folder, target_folder

    folder = draft_model_folder()
    state = load_file(str(folder / "model.safetensors"))
    ids = load_file(str(DRAFTER_DIR / "model.safetensors"))[DRAFT_VOCAB_KEY]
    head = state["lm_head.weight"]
    inside = torch.zeros(len(head), dtype=torch.bool)
    inside[ids] = True
    assert head[~inside].abs().sum() == 0 and head[inside].abs().sum(1).min() > 0
    target = load_file(str(target_folder() / "model.safetensors"))["model.embed_tokens.weight"]
    assert torch.equal(state["model.embed_tokens.weight"], target)
    config = json.loads((folder / "config.json").read_text())
    assert "quantization_config" not in config and config["num_hidden_layers"] == 3
    assert draft_model_folder() == folder  # cached by content


@pytest.mark.slow
def test_eagle3_folder_names_what_vllm_reads() -> None:
    from safetensors.torch import load_file

    from specdeploy.engines.reference.runtime.models import HEAD_REF
    from specdeploy.engines.vllm.export import eagle3_folder
    from specdeploy.runtime_paths import packaged_model

    folder = eagle3_folder()
    config = json.loads((folder / "config.json").read_text())
    source = packaged_model(HEAD_REF)
    assert source is not None
    meta = json.loads((source / "specdeploy_drafter.json").read_text())
    assert config["eagle_config"]["eagle_aux_hidden_state_layer_ids"] == [i + 1 for i in meta["feature_layers"]]
    assert config["norm_output"] is True and config["target_hidden_size"] == 576
    state = load_file(str(folder / "model.safetensors"))
    ids = load_file(str(source / "model.safetensors"))["body.draft_vocab_ids"]
    assert torch.equal(torch.arange(len(ids)) + state["d2t"], ids)
    assert state["lm_head.weight"].shape == (config["draft_vocab_size"], config["hidden_size"])
    rms = state["embed_tokens.weight"].pow(2).mean(1).sqrt()
    assert (rms.max() - rms.min()).item() < 1e-4 * rms.mean().item()  # layer 0's norm divides by a constant
