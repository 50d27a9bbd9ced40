"""Reference model shapes (public `config.json` values) for tests, benches and examples.

Each value is read from https://huggingface.co/<model id>/blob/main/config.json, under the key
`spec_from_config` maps to that field (`num_hidden_layers`, `hidden_size`, ...; the text config of a
multimodal model).

The cost model takes any `ModelSpec`; these are only the shapes its figures and checks are stated on,
so that they run offline without resolving a checkpoint.
"""

from __future__ import annotations

from specdeploy.resolve.model_spec import ModelSpec

LLAMA_3_1_8B = ModelSpec(
    "meta-llama/Llama-3.1-8B-Instruct",
    "LlamaForCausalLM",
    "llama",
    layers=32,
    hidden=4096,
    heads=32,
    kv_heads=8,
    head_dim=128,
    intermediate=14336,
    vocab=128256,
    context=131072,
    source="catalog",
)
LLAMA_3_1_70B = ModelSpec(
    "meta-llama/Llama-3.1-70B-Instruct",
    "LlamaForCausalLM",
    "llama",
    layers=80,
    hidden=8192,
    heads=64,
    kv_heads=8,
    head_dim=128,
    intermediate=28672,
    vocab=128256,
    context=131072,
    source="catalog",
)
LLAMA_3_2_1B = ModelSpec(
    "meta-llama/Llama-3.2-1B-Instruct",
    "LlamaForCausalLM",
    "llama",
    layers=16,
    hidden=2048,
    heads=32,
    kv_heads=8,
    head_dim=64,
    intermediate=8192,
    vocab=128256,
    context=131072,
    tie_embeddings=True,
    source="catalog",
)
EAGLE3_LLAMA_3_1_8B = ModelSpec(
    "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
    "LlamaForCausalLMEagle3",
    "llama",
    layers=1,
    hidden=4096,
    heads=32,
    kv_heads=8,
    head_dim=128,
    intermediate=14336,
    vocab=128256,
    context=2048,
    draft_vocab=32000,
    source="catalog",
)
SMOLLM2_135M = ModelSpec(
    "HuggingFaceTB/SmolLM2-135M-Instruct",
    "LlamaForCausalLM",
    "llama",
    layers=30,
    hidden=576,
    heads=9,
    kv_heads=3,
    head_dim=64,
    intermediate=1536,
    vocab=49152,
    context=8192,
    tie_embeddings=True,
    source="catalog",
)
DEEPSEEK_V3 = ModelSpec(
    "deepseek-ai/DeepSeek-V3",
    "DeepseekV3ForCausalLM",
    "deepseek_v3",
    layers=61,
    hidden=7168,
    heads=128,
    kv_heads=128,
    head_dim=128,
    intermediate=18432,
    vocab=129280,
    context=163840,
    experts=256,
    active_experts=8,
    shared_experts=1,
    moe_intermediate=2048,
    dense_layers=3,
    mla_kv_lora_rank=512,
    mla_q_lora_rank=1536,
    mla_rope_dim=64,
    mtp_layers=1,
    dtype="fp8",
    source="catalog",
)

LLAMA_3_1_405B = ModelSpec(
    "meta-llama/Llama-3.1-405B-Instruct",
    "LlamaForCausalLM",
    "llama",
    layers=126,
    hidden=16384,
    heads=128,
    kv_heads=8,
    head_dim=128,
    intermediate=53248,
    vocab=128256,
    context=131072,
    source="catalog",
)
LLAMA_3_2_3B = ModelSpec(
    "meta-llama/Llama-3.2-3B-Instruct",
    "LlamaForCausalLM",
    "llama",
    layers=28,
    hidden=3072,
    heads=24,
    kv_heads=8,
    head_dim=128,
    intermediate=8192,
    vocab=128256,
    context=131072,
    tie_embeddings=True,
    source="catalog",
)
QWEN3_8B = ModelSpec(
    "Qwen/Qwen3-8B",
    "Qwen3ForCausalLM",
    "qwen3",
    layers=36,
    hidden=4096,
    heads=32,
    kv_heads=8,
    head_dim=128,
    intermediate=12288,
    vocab=151936,
    context=40960,
    source="catalog",
)
LLAMA_4_SCOUT = ModelSpec(
    "meta-llama/Llama-4-Scout-17B-16E-Instruct",
    "Llama4ForConditionalGeneration",
    "llama4",
    layers=48,
    hidden=5120,
    heads=40,
    kv_heads=8,
    head_dim=128,
    intermediate=16384,
    vocab=202048,
    context=10485760,
    experts=16,
    active_experts=1,
    shared_experts=1,
    moe_intermediate=8192,
    source="catalog",
)
"""Text config; chunked local attention on 3 of 4 layers is not modelled (full attention on every layer)."""

LLAMA_2_7B = ModelSpec(
    "meta-llama/Llama-2-7b-chat-hf",
    "LlamaForCausalLM",
    "llama",
    layers=32,
    hidden=4096,
    heads=32,
    kv_heads=32,
    head_dim=128,
    intermediate=11008,
    vocab=32000,
    context=4096,
    source="catalog",
)

QWEN3_30B_A3B = ModelSpec(
    "Qwen/Qwen3-30B-A3B",
    "Qwen3MoeForCausalLM",
    "qwen3_moe",
    layers=48,
    hidden=2048,
    heads=32,
    kv_heads=4,
    head_dim=128,
    intermediate=6144,
    vocab=151936,
    context=40960,
    experts=128,
    active_experts=8,
    moe_intermediate=768,
    source="catalog",
)
"""Every layer MoE (decoder_sparse_step 1, no shared expert)."""

SHAPES: dict[str, ModelSpec] = {
    "llama-3.1-8b": LLAMA_3_1_8B,
    "llama-3.1-70b": LLAMA_3_1_70B,
    "llama-3.2-1b": LLAMA_3_2_1B,
    "eagle3-llama-3.1-8b": EAGLE3_LLAMA_3_1_8B,
    "smollm2-135m": SMOLLM2_135M,
    "deepseek-v3": DEEPSEEK_V3,
    "deepseek-r1": DEEPSEEK_V3,
    "llama-3.1-405b": LLAMA_3_1_405B,
    "llama-3.2-3b": LLAMA_3_2_3B,
    "qwen3-8b": QWEN3_8B,
    "llama-4-scout": LLAMA_4_SCOUT,
    "llama-2-7b": LLAMA_2_7B,
    "qwen3-30b-a3b": QWEN3_30B_A3B,
}
"""Short name -> shape; `bench/gpu/step_cost.py` records these names in its JSON."""
