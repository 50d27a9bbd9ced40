"""N-gram / prompt lookup: drafts copied from earlier text; no drafter model, near-zero drafting cost."""

from __future__ import annotations

from typing import Any

from specdeploy.engines.reference.declare import ReferenceDrafter
from specdeploy.engines.trtllm.declare import TrtllmDecoding
from specdeploy.engines.vllm.declare import TRT_POOL, VllmMethod
from specdeploy.plugin import AcceptancePrior, Mechanism
from specdeploy_mechanisms._common import options

MATCHING = ("max_matching_ngram_size", "is_keep_all", "is_use_oldest", "is_public_pool")
"""NGramDecodingConfig fields the options set, always emitted: 1.2.1 defaults max_matching_ngram_size to 0
(tables/trtllm-1.2.1.json, read at its llm_args module page); tables/trtllm-1.3.json says 2."""


class Ngram(Mechanism):
    name = "ngram"
    summary = "prompt lookup: copies continuations of earlier n-grams; free drafting, input-grounded gains"
    Options = options("NgramOptions")
    chain = False
    engines = {
        "pytorch": TrtllmDecoding(
            decoding_type={"1.2": "NGram", "1.3": "NGram"},
            overlap=lambda _o: False,
            fields=lambda o, _line: {name: getattr(o, name) for name in MATCHING},
            sources={"decoding_type": "P121, P2 from_dict map; P8, P10, P11, P13, P14 Literal"},
        ),
        "reference": ReferenceDrafter("specdeploy.engines.reference.runtime.drafters:NgramDrafter"),
        "vllm": VllmMethod(
            "ngram",
            "none",
            fields={"max_matching_ngram_size": "prompt_lookup_max"},
            ignored={"is_keep_all": TRT_POOL, "is_use_oldest": TRT_POOL, "is_public_pool": TRT_POOL},
            note="prompt_lookup_min defaults to prompt_lookup_max",
        ),
    }
    max_draft_len = 32
    default_draft_len = 4
    drafting = "none"
    training = "none"
    prior = AcceptancePrior(row="scout-ngram-al-turn1", note=" (generic chat, first turn)")

    def draft_cost(self, ctx: Any, batch: int, k: int) -> float:
        """Host-side matching, no forward."""
        return 0.0
