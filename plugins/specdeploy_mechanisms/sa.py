"""SA: suffix-automaton drafting from the prompt and earlier output; no drafter (TRT-LLM 1.3 line)."""

from __future__ import annotations

from specdeploy.plugin import Mechanism


class SuffixAutomaton(Mechanism):
    name = "sa"
    summary = "suffix-automaton lookup over prompt and output; free drafting; TRT-LLM 1.3 line"
    chain = False
    support = {"pytorch": ("1.3",)}
    max_draft_len = 32
    default_draft_len = 4
