"""What each speculative mechanism means to vLLM, keyed by vLLM's method literal.

One row per method specdeploy emits: the specdeploy mechanism it serves, whether `model` carries a drafter, how
the mechanism's options map onto `SpeculativeConfig` fields, and which options vLLM has no counterpart for.
Facts cite `vllm/config/speculative.py @ v0.32.0` (the 0.32 contract table's `speculative` source).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Drafter = Literal["required", "optional", "none"]


@dataclass(frozen=True)
class VllmMethod:
    method: str
    """vLLM's `method` literal."""
    mechanism: str
    """The specdeploy mechanism plugin it serves."""
    drafter: Drafter
    """`required`: `model` is the drafter; `optional`: the drafter, else vLLM uses the target's own weights;
    `none`: the method takes no model."""
    fields: Mapping[str, str] = field(default_factory=dict)
    """Option name -> SpeculativeConfig field it sets."""
    ignored: Mapping[str, str] = field(default_factory=dict)
    """Options with no vLLM counterpart -> why they can be left out (TensorRT-LLM build or pool settings)."""
    refused: Mapping[str, tuple[Any, str]] = field(default_factory=dict)
    """Options vLLM cannot honour unless they keep this value -> (that value, why)."""
    note: str = ""


_TRT_POOL = "a TensorRT-LLM n-gram pool setting; vLLM's n-gram proposer keeps no pool"
METHODS: dict[str, VllmMethod] = {m.method: m for m in (
    VllmMethod("ngram", "ngram", "none",
               fields={"max_matching_ngram_size": "prompt_lookup_max", "prompt_lookup_max": "prompt_lookup_max",
                       "prompt_lookup_min": "prompt_lookup_min"},
               ignored={"is_keep_all": _TRT_POOL, "is_use_oldest": _TRT_POOL, "is_public_pool": _TRT_POOL},
               note="prompt_lookup_min defaults to prompt_lookup_max"),
    VllmMethod("draft_model", "draft_target", "required",
               fields={"draft_tensor_parallel_size": "draft_tensor_parallel_size"}),
    VllmMethod("eagle", "eagle", "required",
               ignored={"num_eagle_layers": "a TensorRT-LLM engine build setting",
                        "max_non_leaves_per_layer": "a TensorRT-LLM engine build setting"},
               refused={"choices": (None, "vLLM 0.32 drafts a chain of num_speculative_tokens, no static tree")}),
    VllmMethod("eagle3", "eagle3", "required",
               fields={"draft_tensor_parallel_size": "draft_tensor_parallel_size"},
               ignored={"one_model": "vLLM always runs the EAGLE-3 head in the target's process"},
               refused={"layers_to_capture": (None, "vLLM reads the captured layers from the head's config.json "
                                                    "(eagle_aux_hidden_state_layer_ids), not from the speculative "
                                                    "config"),
                        "dynamic_tree": (False, "vLLM 0.32 drafts a chain, no dynamic tree"),
                        "dynamic_tree_max_topk": (None, "vLLM 0.32 drafts a chain, no dynamic tree")}),
    VllmMethod("mtp", "mtp", "none",
               ignored={"vanilla": "vLLM runs each MTP layer it has and reuses them when K exceeds their count "
                                   "(K must then be a multiple of it)",
                        "relaxed_topk": "only meaningful with relaxed acceptance",
                        "relaxed_delta": "only meaningful with relaxed acceptance"},
               refused={"relaxed_acceptance": (False, "vLLM 0.32 has no relaxed acceptance")},
               note="the target's own MTP layers draft; only targets whose model_type vLLM maps to an MTP model "
                    "type"),
    VllmMethod("suffix", "sa", "none",
               fields={name: name for name in ("suffix_decoding_max_tree_depth", "suffix_decoding_max_cached_requests",
                                               "suffix_decoding_max_spec_factor", "suffix_decoding_min_token_prob")},
               note="Arctic Inference's suffix trees over the prompt and earlier responses (needs the "
                    "arctic-inference package); K is an upper limit"),
    VllmMethod("dspark", "dspark", "optional",
               fields={"draft_topk": "dspark_draft_topk", "adaptive_verification": "enable_adaptive_verification"},
               note="a standalone DSpark drafter (Qwen3, Qwen3-Omni, Gemma 4, Kimi K3), or DeepSeek-V4/V4.1 stages "
                    "inside the target checkpoint"),
)}


def for_mechanism(mechanism: str) -> VllmMethod | None:
    """The vLLM method that serves a specdeploy mechanism; None when vLLM has none."""
    return next((m for m in METHODS.values() if m.mechanism == mechanism), None)
