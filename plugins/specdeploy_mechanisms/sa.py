"""SA: suffix-automaton drafting from the prompt and earlier output; no drafter (TRT-LLM 1.3 line)."""

from __future__ import annotations

from typing import Any

from specdeploy.engines.trtllm.declare import TrtllmDecoding
from specdeploy.plugin import AcceptancePrior, Mechanism


class SuffixAutomaton(Mechanism):
    name = "sa"
    summary = "suffix-automaton lookup over prompt and output; free drafting; TRT-LLM 1.3 line"
    chain = False
    engines = {
        "pytorch": TrtllmDecoding(
            decoding_type={"1.3": "SA"},
            since={"1.3": "1.3.0rc8"},
            unconfirmed=("1.3.sa_pard_since",),
            sources={"decoding_type": "Literal['SA'] in P8, P10, P11, P13, P14; D7, D27; absent from P2 and D6"},
        )
    }
    max_draft_len = 32
    default_draft_len = 4
    drafting = "none"
    training = "none"
    prior = AcceptancePrior(row="scout-ngram-al-turn1", note=" (TRT-LLM's n-gram is a suffix automaton; the same row)")

    def draft_cost(self, ctx: Any, batch: int, k: int) -> float:
        """Host-side suffix-automaton lookup, no forward."""
        return 0.0
