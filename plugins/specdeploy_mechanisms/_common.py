"""Rules several built-in mechanisms share."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from specdeploy.issues import Issue
from specdeploy.plugin import CheckContext, lazy_options


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


def options(model: str) -> Any:
    """A model of `_options.py` as a plugin's `Options`, imported on first use."""
    return lazy_options(f"specdeploy_mechanisms._options:{model}")


def tree_choices(tree: list[list[int]] | None) -> str:
    """A token tree as the tensorrtllm backend's `medusa_choices` / `eagle_choices` parameter."""
    from specdeploy.render.env import choices

    return choices(tree)
