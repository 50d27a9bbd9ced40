"""The built-in mechanisms' options models, in one module so that importing a plugin does not import pydantic.

Each plugin names its model with `_common.options()`: this module is imported when a profile names a mechanism.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class DflashOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    block_size: int = Field(
        16,
        ge=2,
        le=64,
        description="Tokens the drafter predicts per block; the draft length is at most block_size - 1.",
    )


class DsparkOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    draft_topk: int | None = Field(
        None,
        ge=1,
        description="vLLM `dspark_draft_topk`: score only the top-k base-logit candidates in the Markov projection "
        "(Qwen3 and Qwen3-Omni DSpark drafters only; draft tensor parallelism 1); unset: the drafter config's value. "
        "vLLM only: refused on TensorRT-LLM.",
    )
    adaptive_verification: bool = Field(
        False,
        description="vLLM `enable_adaptive_verification`: size each request's verification from the drafter's "
        "confidence. vLLM only: refused on TensorRT-LLM.",
    )


class EagleOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    num_eagle_layers: int = Field(
        4, ge=1, le=16, description="Tree depth the engine is built for (`--num_eagle_layers`)."
    )
    max_non_leaves_per_layer: int = Field(
        10,
        ge=1,
        description="Non-leaf nodes kept per tree level (the EAGLE converter's "
        "`--max_non_leaves_per_layer`; default 10 there).",
    )
    choices: list[list[int]] | None = Field(
        None, description="Static tree (`eagle_choices`); depth <= num_eagle_layers."
    )


class Eagle3Options(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    one_model: bool = Field(
        True,
        description="Drafter inside the target's CUDA graph (`eagle3_one_model`); false = two-model (no overlap).",
    )
    layers_to_capture: list[int] | None = Field(
        None,
        description="Target layers feeding the drafter (`eagle3_layers_to_capture`); default {1, L/2-1, L-4}.",
    )
    dynamic_tree: bool = Field(False, description="Dynamic draft tree (TRT-LLM 1.3 line only).")
    dynamic_tree_max_topk: int | None = Field(None, ge=1, description="Top-K per level of the dynamic tree.")


class LookaheadOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    window_size: int = Field(4, ge=1, le=64, description="W: lookahead window (`max_window_size`).")
    ngram_size: int = Field(3, ge=1, le=64, description="N: n-gram size (`max_ngram_size`).")
    verification_set_size: int = Field(
        4, ge=1, le=64, description="G: candidate n-grams verified per step (`max_verification_set_size`)."
    )


class MedusaOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    num_heads: int = Field(4, ge=1, le=16, description="Medusa heads in the checkpoint (`--num_medusa_heads`).")
    choices: list[list[int]] | None = Field(
        None, description="Static token tree (`medusa_choices`); paths of head indices, depth <= num_heads."
    )


class MtpOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    vanilla: bool = Field(
        False, description="Use one MTP layer per draft position (`use_mtp_vanilla`); needs that many MTP layers."
    )
    relaxed_acceptance: bool = Field(
        False, description="Relaxed acceptance in the thinking phase (`use_relaxed_acceptance_for_thinking`)."
    )
    relaxed_topk: int = Field(1, ge=1, description="Candidates considered by relaxed acceptance.")
    relaxed_delta: float = Field(0.0, ge=0.0, description="Probability slack of relaxed acceptance.")


class NgramOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    max_matching_ngram_size: int = Field(
        3,
        ge=1,
        le=32,
        description="Longest suffix matched against the pool (always emitted: TensorRT-LLM 1.2.1 defaults it to 0).",
    )
    is_keep_all: bool = Field(True, description="Keep every candidate, not only the longest match.")
    is_use_oldest: bool = Field(True, description="Propose the oldest match.")
    is_public_pool: bool = Field(True, description="One pool shared by all requests.")


class SuffixOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    max_tree_depth: int = Field(
        24,
        ge=1,
        description="vLLM `suffix_decoding_max_tree_depth`: depth of the prompt and global suffix trees; the prefix "
        "match plus the speculation never exceeds it (draft_len must not either).",
    )
    max_cached_requests: int = Field(
        10000,
        ge=0,
        description="vLLM `suffix_decoding_max_cached_requests`: past responses kept in the global tree (FIFO "
        "eviction); 0 turns the global tree off, the per-prompt trees stay.",
    )
    max_spec_factor: float = Field(
        1.0,
        ge=0.0,
        description="vLLM `suffix_decoding_max_spec_factor`: at most this many tokens speculated per token of prefix "
        "match.",
    )
    min_token_prob: float = Field(
        0.1,
        ge=0.0,
        le=1.0,
        description="vLLM `suffix_decoding_min_token_prob`: speculate only tokens whose estimated probability "
        "(frequency counts in the tree) is at least this.",
    )


class RedrafterOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    num_beams: int = Field(5, ge=1, le=32, description="Beams drafted per step (`--redrafter_num_beams`).")
