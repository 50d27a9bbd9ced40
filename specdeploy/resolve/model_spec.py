"""ModelSpec: the facts of a checkpoint's `config.json` that planning, fit and the cost model need."""

from __future__ import annotations

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

    @property
    def is_eagle3_drafter(self) -> bool:
        return "eagle3" in self.architecture.lower() or self.draft_vocab > 0

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


def _first(config: dict[str, Any], *keys: str, default: Any = None) -> Any:
    for key in keys:
        if config.get(key) is not None:
            return config[key]
    return default


def spec_from_config(name: str, config: dict[str, Any], source: str) -> ModelSpec:
    """Build a ModelSpec from a Hugging Face `config.json` dict (Llama, Qwen, Mistral, DeepSeek, EAGLE-3, ...)."""
    if "text_config" in config and "hidden_size" not in config:
        config = {**config["text_config"], "architectures": config.get("architectures", [])}
    try:
        hidden = int(config["hidden_size"])
        heads = int(config["num_attention_heads"])
        layers = int(config["num_hidden_layers"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(
            f"config.json of {name} lacks a usable {exc} (hidden_size, num_attention_heads, num_hidden_layers)"
        ) from exc
    kv_lora = int(config.get("kv_lora_rank") or 0)
    head_dim = int(
        _first(config, "head_dim", "v_head_dim", default=hidden // heads)
        if not kv_lora
        else config.get("qk_nope_head_dim") or config.get("v_head_dim") or hidden // heads
    )
    torch_dtype = str(_first(config, "torch_dtype", "dtype", default="bfloat16"))
    experts = int(_first(config, "n_routed_experts", "num_local_experts", "num_experts", default=0) or 0)
    return ModelSpec(
        name=name,
        architecture=(config.get("architectures") or ["unknown"])[0],
        model_type=str(config.get("model_type", "unknown")),
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=int(_first(config, "num_key_value_heads", default=heads)),
        head_dim=head_dim,
        intermediate=int(_first(config, "intermediate_size", "ffn_dim", default=4 * hidden)),
        vocab=int(config.get("vocab_size", 0)),
        context=int(_first(config, "max_position_embeddings", "max_sequence_length", "seq_length", default=2048)),
        dtype=torch_dtype if torch_dtype in BYTES_PER_PARAM else "bfloat16",
        tie_embeddings=bool(config.get("tie_word_embeddings", False)),
        experts=experts,
        active_experts=int(_first(config, "num_experts_per_tok", "moe_topk", default=0) or 0) if experts else 0,
        shared_experts=int(config.get("n_shared_experts") or 0),
        moe_intermediate=int(_first(config, "moe_intermediate_size", default=0) or 0),
        dense_layers=int(config.get("first_k_dense_replace") or 0),
        mla_kv_lora_rank=kv_lora,
        mla_q_lora_rank=int(config.get("q_lora_rank") or 0),
        mla_rope_dim=int(config.get("qk_rope_head_dim") or 0) if kv_lora else 0,
        mtp_layers=int(config.get("num_nextn_predict_layers") or 0),
        sliding_window=int(config.get("sliding_window") or 0) if config.get("use_sliding_window", True) else 0,
        draft_vocab=int(config.get("draft_vocab_size") or 0),
        source=source,
    )
