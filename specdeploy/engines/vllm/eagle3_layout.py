"""The reference runtime's EAGLE head rewritten as a vLLM 0.32 eagle3 checkpoint.

The two heads differ in shape (vLLM: `vllm/model_executor/models/llama_eagle3.py @ v0.32.0`; ours:
specdeploy/engines/reference/runtime/eagle_model.py). Ours computes x = fc([embed(t); g]) = A·e + B·g and runs one
ordinary Llama layer on x. vLLM's first eagle3 layer instead feeds [input_layernorm(e); hidden_norm(g)] to
attention and keeps g itself as the residual, so no weights of one layer reproduce ours. Two layers do, for the
first draft of a step:

- vLLM's `fc` (over the three captured target layers) is B·fuse, so vLLM's residual g is already our B·g.
- Layer 0 adds A·e through attention that sees only its own position: q and k are biases alone, placed on RoPE's
  fastest pairs and scaled so every other position scores >= MIN_GAP lower (softmax weight < e^-MIN_GAP); v reads
  the embedding, o_proj is the identity, the MLP is zero. vLLM normalizes the embedding before v, so the head
  carries its own embedding 9 columns wider (hidden_size 585, a multiple of the 9 heads): the first gives every
  row the same RMS, and the norm then only divides by a constant. Every layer has 9 KV heads (ours: 3, repeated),
  so v has full rank.
- Layer 1 is our layer, padded with zero columns, its norms scaled by sqrt(576/585) (the RMS spans 9 more zeros).
- `norm_output: true` hands the chain the post-norm hidden state, as ours does; the LM head is the target's, cut to
  the draft vocabulary (`draft_vocab_size`, `d2t`).

In a chain step vLLM's residual is the previous post-norm state y where ours has B·y: drafts 2..K differ (B is
near I; the acceptance per position in docs/engines/vllm.md shows what that costs).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

MIN_GAP = 60.0
"""Softmax logit gap between a position and any other in layer 0 (e^-60 ~ 1e-26: exact in fp32)."""
CONTEXT = 8192
"""Positions the local attention is checked over (SmolLM2's max_position_embeddings)."""
FAST_PAIRS = 8
"""RoPE pairs (fastest first) the layer-0 q/k use: enough that no offset below CONTEXT comes back into phase."""


def write_eagle3(source: Path, embed: Any, target_config: dict[str, Any], out: Path) -> None:
    """Write config.json and model.safetensors of the vLLM head into `out` (tokenizer not needed by vLLM)."""
    import torch
    from safetensors.torch import load_file, save_file

    meta = json.loads((source / "specdeploy_drafter.json").read_text(encoding="utf-8"))
    own = {k: v.to(torch.float32) for k, v in load_file(str(source / "model.safetensors")).items()}
    ids = own.pop("body.draft_vocab_ids").to(torch.long)
    hidden = embed.shape[1]
    heads, head_dim = int(target_config["num_attention_heads"]), int(target_config["head_dim"])
    wide = (hidden // heads + 1) * heads  # transformers' LlamaConfig wants a multiple of the heads
    more = wide - hidden
    kv_heads = int(target_config["num_key_value_heads"])
    fc_a, fc_b = own["fc.weight"][:, :hidden], own["fc.weight"][:, hidden:]
    eps = float(target_config["rms_norm_eps"])
    shrink = math.sqrt(hidden / wide)

    def pad(w: Any, rows: int = 0, cols: int = 0) -> Any:
        return torch.nn.functional.pad(w, (0, cols) if w.dim() == 1 else (0, cols, 0, rows))

    def repeat_kv(w: Any) -> Any:
        return w.view(kv_heads, head_dim, -1).repeat_interleave(heads // kv_heads, 0).reshape(heads * head_dim, -1)

    rms2 = float((embed.pow(2).sum(1).max() / wide) * 1.01)
    extra = (wide * rms2 - embed.pow(2).sum(1)).sqrt()
    local_q, local_k = local_attention_bias(heads, head_dim, float(target_config["rope_parameters"]["rope_theta"]))
    inner = heads * head_dim
    body = "body.model.layers.0."
    state = {
        "embed_tokens.weight": pad(torch.cat([embed, extra[:, None]], 1), cols=more - 1),
        "fc.weight": pad(fc_b @ own["fuse.weight"], rows=more),
        "layers.0.input_layernorm.weight": torch.ones(wide),
        "layers.0.hidden_norm.weight": torch.ones(wide),
        "layers.0.post_attention_layernorm.weight": torch.ones(wide),
        "layers.0.self_attn.q_proj.weight": torch.zeros(inner, 2 * wide),
        "layers.0.self_attn.q_proj.bias": local_q,
        "layers.0.self_attn.k_proj.weight": torch.zeros(inner, 2 * wide),
        "layers.0.self_attn.k_proj.bias": local_k,
        "layers.0.self_attn.v_proj.weight": pad(fc_a * math.sqrt(rms2 + eps), cols=wide + more),
        "layers.0.self_attn.v_proj.bias": torch.zeros(inner),
        "layers.0.self_attn.o_proj.weight": pad(torch.eye(inner, hidden), rows=more),
        "layers.0.self_attn.o_proj.bias": torch.zeros(wide),
        "layers.0.mlp.gate_proj.weight": torch.zeros(int(target_config["intermediate_size"]), wide),
        "layers.0.mlp.up_proj.weight": torch.zeros(int(target_config["intermediate_size"]), wide),
        "layers.0.mlp.down_proj.weight": torch.zeros(wide, int(target_config["intermediate_size"])),
        "layers.1.input_layernorm.weight": pad(own[body + "input_layernorm.weight"] * shrink, cols=more),
        "layers.1.post_attention_layernorm.weight": pad(
            own[body + "post_attention_layernorm.weight"] * shrink, cols=more
        ),
        "layers.1.self_attn.q_proj.weight": pad(own[body + "self_attn.q_proj.weight"], cols=more),
        "layers.1.self_attn.k_proj.weight": pad(repeat_kv(own[body + "self_attn.k_proj.weight"]), cols=more),
        "layers.1.self_attn.v_proj.weight": pad(repeat_kv(own[body + "self_attn.v_proj.weight"]), cols=more),
        "layers.1.self_attn.o_proj.weight": pad(own[body + "self_attn.o_proj.weight"], rows=more),
        "layers.1.mlp.gate_proj.weight": pad(own[body + "mlp.gate_proj.weight"], cols=more),
        "layers.1.mlp.up_proj.weight": pad(own[body + "mlp.up_proj.weight"], cols=more),
        "layers.1.mlp.down_proj.weight": pad(own[body + "mlp.down_proj.weight"], rows=more),
        "norm.weight": pad(own["body.model.norm.weight"] * shrink, cols=more),
        "lm_head.weight": pad(embed[ids], cols=more),
        "d2t": ids - torch.arange(len(ids)),
    }
    state |= {f"layers.1.self_attn.{p}_proj.bias": torch.zeros(inner) for p in "qkv"}
    state["layers.1.self_attn.o_proj.bias"] = torch.zeros(wide)
    save_file({k: v.contiguous() for k, v in state.items()}, str(out / "model.safetensors"), metadata={"format": "pt"})
    layers = [int(i) + 1 for i in meta["feature_layers"]]  # vLLM numbers a captured state by the layer it enters
    config = {
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        "hidden_size": wide,
        "target_hidden_size": hidden,
        "intermediate_size": target_config["intermediate_size"],
        "num_attention_heads": heads,
        "num_key_value_heads": heads,
        "head_dim": head_dim,
        "num_hidden_layers": 2,
        "attention_bias": True,
        "mlp_bias": False,
        "hidden_act": target_config["hidden_act"],
        "rms_norm_eps": eps,
        "max_position_embeddings": target_config["max_position_embeddings"],
        "rope_parameters": target_config["rope_parameters"],
        "tie_word_embeddings": False,
        "vocab_size": embed.shape[0],
        "draft_vocab_size": len(ids),
        "norm_output": True,
        "dtype": "float32",
        "bos_token_id": target_config.get("bos_token_id"),
        "eos_token_id": target_config.get("eos_token_id"),
        "eagle_config": {"eagle_aux_hidden_state_layer_ids": layers, "use_aux_hidden_state": True},
    }
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")


def local_attention_bias(heads: int, head_dim: int, theta: float) -> tuple[Any, Any]:
    """q and k biases whose RoPE-rotated dot product peaks at offset 0 and stays MIN_GAP lower at every offset
    1..CONTEXT (vLLM's Llama RoPE is neox style: pair i is dims i and i + head_dim/2, frequency theta^(-2i/d))."""
    import torch

    freqs = theta ** (-2 * torch.arange(FAST_PAIRS, dtype=torch.float64) / head_dim)
    offsets = torch.arange(1, CONTEXT + 1, dtype=torch.float64)
    gap = (1 - torch.cos(offsets[:, None] * freqs[None, :])).sum(1).min().item()  # per unit weight on each pair
    weight = math.sqrt(MIN_GAP * math.sqrt(head_dim) / gap)  # scores are divided by sqrt(head_dim)
    one = torch.zeros(head_dim)
    one[:FAST_PAIRS] = weight
    bias = one.repeat(heads)
    return bias.clone(), bias.clone()
