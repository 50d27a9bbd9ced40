"""DFlash: a block-diffusion drafter proposes a whole block in one forward (TRT-LLM 1.3 line)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from specdeploy.engines.trtllm.declare import TrtllmDecoding
from specdeploy.issues import Issue
from specdeploy.plugin import AcceptancePrior, CheckContext, Mechanism
from specdeploy_mechanisms._common import options

if TYPE_CHECKING:
    from specdeploy_mechanisms._options import DflashOptions


class Dflash(Mechanism):
    name = "dflash"
    summary = "block-diffusion drafter: one forward drafts a block; TRT-LLM 1.3 line"
    Options = options("DflashOptions")
    needs_draft_model = True
    chain = False
    engines = {
        "pytorch": TrtllmDecoding(
            decoding_type={"1.3": "DFlash"},
            since={"1.3": "1.3.0rc14"},
            sources={
                "decoding_type": "Literal['DFlash'] in P14 and P23; D27; absent from P2, P10, P11, P13 (their "
                "PARDDecodingConfig is followed by AutoDecodingConfig)"
            },
        )
    }
    max_draft_len = 63
    default_draft_len = 7
    drafting = "one_pass"
    training = "trained block drafter per target"
    prior = AcceptancePrior(
        rates=(0.88,),
        basis="i.i.d. alpha = 0.88 (6.17x on Qwen3-8B, ~2.5x EAGLE-3's)",
        source="z-lab.ai/projects/dflash; arXiv 2602.06036",
    )

    def check(self, ctx: CheckContext) -> Iterator[Issue]:
        opts: DflashOptions = ctx.options
        draft_len = ctx.profile.speculative.draft_len
        if isinstance(draft_len, int) and draft_len > opts.block_size - 1:
            yield ctx.issue("draft_len", f"DFlash drafts at most block_size - 1 = {opts.block_size - 1} tokens")
        if ctx.target and ctx.draft and ctx.draft.hidden != ctx.target.hidden:
            yield ctx.issue(
                "draft_model",
                f"DFlash drafter hidden size {ctx.draft.hidden} does not match the target's {ctx.target.hidden}",
            )

    def draft_cost(self, ctx: Any, batch: int, k: int) -> float:
        """One block forward of the drafter over K positions (default drafter: 5 target-shaped layers)."""
        model = ctx.draft or replace(ctx.target, layers=min(5, ctx.target.layers), dense_layers=0)
        return float(ctx.forward(model, batch=batch, tokens=max(1, k)))
