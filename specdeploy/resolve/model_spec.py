"""ModelSpec: the facts of a checkpoint's `config.json` that planning, fit and the cost model need."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

BYTES_PER_PARAM = {
    "float32": 4.0,
    "bfloat16": 2.0,
    "float16": 2.0,
    "fp8": 1.0,
    "int8_sq": 1.0,
    "nvfp4": 0.5625,
    "int4_awq": 0.5625,
    "w4a8_awq": 0.5625,
}
"""Weight bytes per parameter; 4-bit formats include one scale per 16-32 weights (about 1/16 extra)."""


@dataclass(frozen=True)
class ModelSpec:
    """Architecture facts; `source` says where they were read (folder, HF cache, hub, catalog)."""

    name: str
    architecture: str
    model_type: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    context: int
    dtype: str = "bfloat16"
    tie_embeddings: bool = False
    experts: int = 0
    active_experts: int = 0
    shared_experts: int = 0
    moe_intermediate: int = 0
    dense_layers: int = 0
    mla_kv_lora_rank: int = 0
    mla_q_lora_rank: int = 0
    mla_rope_dim: int = 0
    mtp_layers: int = 0
    sliding_window: int = 0
    draft_vocab: int = 0
    quantization: str = "none"
    """The checkpoint's own quantization (`quantization_config`), as a `target.quantization` value; "none" when
    its weights are in `dtype`, "other:<method>" for a format specdeploy does not plan."""
    source: str = "config.json"

    @property
    def group_size(self) -> int:
        """G = query heads per KV head (guideline 2)."""
        return max(1, self.heads // max(1, self.kv_heads))

    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    @property
    def is_mla(self) -> bool:
        return self.mla_kv_lora_rank > 0

    def attention_params(self) -> int:
        if self.is_mla:
            q = (
                self.hidden * self.mla_q_lora_rank
                + self.mla_q_lora_rank * self.heads * (self.head_dim + self.mla_rope_dim)
                if self.mla_q_lora_rank
                else self.hidden * self.heads * (self.head_dim + self.mla_rope_dim)
            )
            kv = (
                self.hidden * (self.mla_kv_lora_rank + self.mla_rope_dim)
                + self.mla_kv_lora_rank * self.heads * 2 * self.head_dim
            )
            return q + kv + self.heads * self.head_dim * self.hidden
        q_and_o = 2 * self.hidden * self.heads * self.head_dim
        return q_and_o + 2 * self.hidden * self.kv_heads * self.head_dim

    def mlp_params(self, *, active_only: bool = False) -> int:
        """Parameters of all MLPs; with `active_only`, only the experts one token touches."""
        dense = 3 * self.hidden * self.intermediate
        if not self.is_moe:
            return self.layers * dense
        experts = self.active_experts if active_only else self.experts
        moe_layer = (
            3 * self.hidden * self.moe_intermediate * (experts + self.shared_experts) + self.hidden * self.experts
        )
        return self.dense_layers * dense + (self.layers - self.dense_layers) * moe_layer

    def parameter_count(self, *, active_only: bool = False) -> int:
        embed = self.vocab * self.hidden * (1 if self.tie_embeddings else 2)
        per_layer_norms = 2 * self.hidden
        body = self.layers * (self.attention_params() + per_layer_norms) + self.mlp_params(active_only=active_only)
        return embed + body + self.hidden

    def weight_bytes(self, quantization: str = "none") -> int:
        per = BYTES_PER_PARAM[self.dtype if quantization == "none" else quantization]
        return int(self.parameter_count() * per)

    def kv_bytes_per_token(self, kv_dtype_bytes: float = 2.0) -> int:
        """KV-cache bytes one token holds across all layers (MLA caches the compressed latent)."""
        if self.is_mla:
            return int(self.layers * (self.mla_kv_lora_rank + self.mla_rope_dim) * kv_dtype_bytes)
        return int(self.layers * 2 * self.kv_heads * self.head_dim * kv_dtype_bytes)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(
            group_size=self.group_size, parameters=self.parameter_count(), kv_bytes_per_token=self.kv_bytes_per_token()
        )
        return data


MAX_SIZE = 2**40
"""Bound of every size read from config.json (products of a few stay finite floats)."""


def _first(config: dict[str, Any], *keys: str, default: Any = None) -> Any:
    for key in keys:
        if config.get(key) is not None:
            return config[key]
    return default


def _count(config: dict[str, Any], *keys: str, default: int = 0, positive: bool = False) -> int:
    """A size from config.json: a finite whole number, >= 0 (> 0 when `positive`); `hidden_size: Infinity` or
    `-4096` is refused here instead of failing deep in the cost model (OverflowError, negative memory)."""
    value = _first(config, *keys, default=default)
    if value is False:  # `sliding_window: false` and the like: not set
        value = 0
    whole = (
        isinstance(value, int)
        and not isinstance(value, bool)
        or (isinstance(value, float) and math.isfinite(value) and value.is_integer())
    )
    if not whole or value < 0 or (positive and value == 0):
        raise ValueError(
            f"config.json {keys[0]}: {value!r:.40} is not a {'positive' if positive else 'non-negative'} whole number"
        )
    if value > MAX_SIZE:  # `hidden_size: 1.06e153` is whole, and its square overflowed the cost model
        raise ValueError(f"config.json {keys[0]}: {value!r:.40} is larger than any model's (2**40 at most)")
    return int(value)


MODELOPT_ALGOS = {
    "FP8": "fp8",
    "NVFP4": "nvfp4",
    "W4A16_AWQ": "int4_awq",
    "W4A8_AWQ": "w4a8_awq",
    "W8A8_SQ_PER_CHANNEL": "int8_sq",
}
"""Model-Optimizer `quant_algo` -> `target.quantization` (the formats the profile schema names)."""


def checkpoint_quantization(config: dict[str, Any]) -> str:
    """What a pre-quantized checkpoint declares: Model-Optimizer exports say `quant_method: modelopt` and a
    `quant_algo` (in config.json, or hf_quant_config.json's `quantization`, which hub.py folds in); block-scaled
    FP8 checkpoints (DeepSeek-V3) say `quant_method: fp8`."""
    quant = config.get("quantization_config")
    if not isinstance(quant, dict):
        return "none"
    method = str(quant.get("quant_method", "")).lower()
    if method == "fp8":
        return "fp8"
    if method == "modelopt":
        algo = str(quant.get("quant_algo", ""))
        return MODELOPT_ALGOS.get(algo, f"other:modelopt {algo}")
    return f"other:{method or 'unnamed'}"


def spec_from_config(name: str, config: dict[str, Any], source: str) -> ModelSpec:
    """Build a ModelSpec from a Hugging Face `config.json` dict (Llama, Qwen, Mistral, DeepSeek, EAGLE-3, ...);
    ValueError (naming the key) for sizes no model can have."""
    if "text_config" in config and "hidden_size" not in config and isinstance(config["text_config"], dict):
        config = {**config["text_config"], "architectures": config.get("architectures", [])}
    missing = [k for k in ("hidden_size", "num_attention_heads", "num_hidden_layers") if config.get(k) is None]
    if missing:
        raise ValueError(
            f"config.json of {name} lacks a usable {missing[0]!r} (hidden_size, num_attention_heads, num_hidden_layers)"
        )
    hidden = _count(config, "hidden_size", positive=True)
    heads = _count(config, "num_attention_heads", positive=True)
    layers = _count(config, "num_hidden_layers", positive=True)
    kv_heads = _count(config, "num_key_value_heads", default=heads, positive=True)
    if heads % kv_heads:
        raise ValueError(f"config.json num_attention_heads {heads} is not a multiple of num_key_value_heads {kv_heads}")
    kv_lora = _count(config, "kv_lora_rank")
    explicit_head_dim = (
        _first(config, "head_dim", "v_head_dim") if not kv_lora else _first(config, "qk_nope_head_dim", "v_head_dim")
    )
    if explicit_head_dim is None and hidden % heads:
        raise ValueError(
            f"config.json hidden_size {hidden} is not divisible by num_attention_heads {heads} "
            "(and no head_dim is given)"
        )
    head_dim = _count({"head_dim": explicit_head_dim}, "head_dim", default=hidden // heads, positive=True)
    torch_dtype = str(_first(config, "torch_dtype", "dtype", default="bfloat16"))
    experts = _count(config, "n_routed_experts", "num_local_experts", "num_experts")
    architectures = config.get("architectures")
    return ModelSpec(
        name=name,
        architecture=str(architectures[0]) if isinstance(architectures, list) and architectures else "unknown",
        model_type=str(config.get("model_type", "unknown")),
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        intermediate=_count(config, "intermediate_size", "ffn_dim", default=4 * hidden),
        vocab=_count(config, "vocab_size"),
        context=_count(
            config, "max_position_embeddings", "max_sequence_length", "seq_length", default=2048, positive=True
        ),
        dtype=torch_dtype if torch_dtype in BYTES_PER_PARAM else "bfloat16",
        tie_embeddings=bool(config.get("tie_word_embeddings", False)),
        experts=experts,
        active_experts=_count(config, "num_experts_per_tok", "moe_topk") if experts else 0,
        shared_experts=_count(config, "n_shared_experts"),
        moe_intermediate=_count(config, "moe_intermediate_size"),
        dense_layers=_count(config, "first_k_dense_replace"),
        mla_kv_lora_rank=kv_lora,
        mla_q_lora_rank=_count(config, "q_lora_rank"),
        mla_rope_dim=_count(config, "qk_rope_head_dim") if kv_lora else 0,
        mtp_layers=_count(config, "num_nextn_predict_layers"),
        sliding_window=_count(config, "sliding_window") if config.get("use_sliding_window", True) else 0,
        draft_vocab=_count(config, "draft_vocab_size"),
        quantization=checkpoint_quantization(config),
        source=source,
    )
