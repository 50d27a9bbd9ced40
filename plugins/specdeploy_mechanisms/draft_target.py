"""Draft/target: a small model of the same family drafts, the target verifies."""

from __future__ import annotations

from collections.abc import Iterator

from specdeploy.plugin import CheckContext, Mechanism
from specdeploy.profile.issues import Issue
from specdeploy_mechanisms._common import same_vocabulary


class DraftTarget(Mechanism):
    name = "draft_target"
    summary = "a smaller model with the target's tokenizer drafts autoregressively"
    needs_draft_model = True
    support = {"pytorch": ("1.2", "1.3"), "tensorrt": ("1.2",), "reference": ("cpu",)}
    default_draft_len = 4

    def check(self, ctx: CheckContext) -> Iterator[Issue]:
        yield from same_vocabulary(ctx)
        if ctx.target and ctx.draft and ctx.draft.parameter_count() >= ctx.target.parameter_count():
            yield ctx.issue(
                "draft_model",
                f"the drafter ({ctx.draft.parameter_count() / 1e9:.2f} B parameters) is not "
                f"smaller than the target ({ctx.target.parameter_count() / 1e9:.2f} B)",
                "use a drafter 10-50x smaller than the target",
            )
