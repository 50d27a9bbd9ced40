"""DFlash: a block-diffusion drafter proposes a whole block in one forward (TRT-LLM 1.3 line)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from specdeploy.plugin import CheckContext, Mechanism
from specdeploy.profile.issues import Issue
from specdeploy_mechanisms._common import options

if TYPE_CHECKING:
    from specdeploy_mechanisms._options import DflashOptions


class Dflash(Mechanism):
    name = "dflash"
    summary = "block-diffusion drafter: one forward drafts a block; TRT-LLM 1.3 line"
    Options = options("DflashOptions")
    needs_draft_model = True
    chain = False
    support = {"pytorch": ("1.3",)}
    max_draft_len = 63
    default_draft_len = 7

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
