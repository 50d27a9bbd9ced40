"""PARD: a parallel draft model predicts several masked positions in one forward (TRT-LLM 1.3 line)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from specdeploy.engines.trtllm.declare import TrtllmDecoding
from specdeploy.issues import Issue
from specdeploy.plugin import AcceptancePrior, CheckContext, Mechanism
from specdeploy_mechanisms._common import same_vocabulary


class Pard(Mechanism):
    name = "pard"
    summary = "parallel draft model: K positions in one drafter forward; TRT-LLM 1.3 line"
    needs_draft_model = True
    chain = False
    engines = {
        "pytorch": TrtllmDecoding(
            decoding_type={"1.3": "PARD"},
            since={"1.3": "1.3.0rc8"},
            unconfirmed=("1.3.sa_pard_since",),
            sources={"decoding_type": "Literal['PARD'] in P8, P10, P11, P13, P14; D7; absent from P2 and D6"},
        )
    }
    max_draft_len = 16
    default_draft_len = 4
    drafting = "one_pass"
    training = "adapted draft model"
    prior = AcceptancePrior(
        rates=(0.75,), basis="i.i.d. alpha = 0.75 (parallel draft model; no published figure)", source="assumed"
    )

    def check(self, ctx: CheckContext) -> Iterator[Issue]:
        yield from same_vocabulary(ctx)

    def draft_cost(self, ctx: Any, batch: int, k: int) -> float:
        """One forward of the separate draft model over K mask tokens."""
        if ctx.draft is None:
            return float(ctx.generic(batch, k))
        return float(ctx.forward(ctx.draft, batch=batch, tokens=max(1, k), separate=True))
