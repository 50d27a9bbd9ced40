"""Multi-token prediction: the target's own MTP layers draft (DeepSeek-V3/R1; PyTorch backend)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from specdeploy.plugin import CheckContext, Mechanism
from specdeploy.profile.issues import Issue
from specdeploy_mechanisms._common import options

if TYPE_CHECKING:
    from specdeploy_mechanisms._options import MtpOptions


class Mtp(Mechanism):
    name = "mtp"
    summary = "the target's multi-token-prediction layers draft; no separate drafter to serve"
    Options = options("MtpOptions")
    support = {"pytorch": ("1.2", "1.3")}
    max_draft_len = 16
    default_draft_len = 3

    def check(self, ctx: CheckContext) -> Iterator[Issue]:
        opts: MtpOptions = ctx.options
        if ctx.target is None:
            return
        if ctx.target.mtp_layers < 1:
            yield ctx.issue(
                "mechanism",
                f"{ctx.target.name} has no MTP layers (num_nextn_predict_layers = 0)",
                "use eagle3 or draft_target for this model",
            )
        draft_len = ctx.profile.speculative.draft_len
        if opts.vanilla and isinstance(draft_len, int) and draft_len > ctx.target.mtp_layers:
            yield ctx.issue(
                "draft_len",
                f"vanilla MTP drafts one token per MTP layer: draft_len {draft_len} > {ctx.target.mtp_layers} layers",
                "set options.vanilla: false (MTP-Eagle reuses the layer)",
            )
