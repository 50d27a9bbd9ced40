"""Rules several built-in mechanisms share."""

from __future__ import annotations

from collections.abc import Iterator

from specdeploy.plugin import CheckContext
from specdeploy.profile.issues import Issue


def same_vocabulary(ctx: CheckContext) -> Iterator[Issue]:
    """A separate drafter proposes token ids of the target: the vocabularies must be the same."""
    if ctx.target and ctx.draft and ctx.draft.vocab and ctx.target.vocab and ctx.draft.vocab != ctx.target.vocab:
        yield ctx.issue(
            "draft_model",
            f"drafter vocabulary ({ctx.draft.vocab}) differs from the target's "
            f"({ctx.target.vocab}); a drafter must share the target's tokenizer",
            "pick a drafter from the same model family (e.g. Llama-3.2-1B for Llama-3.x)",
        )


def tree_depth(choices: list[list[int]] | None) -> int:
    return max((len(c) for c in choices), default=0) if choices else 0
