"""Medusa: extra decoding heads on the target propose a token tree (engine backend, TRT-LLM <= 1.2.x)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from specdeploy.plugin import CheckContext, Mechanism
from specdeploy.profile.issues import Issue
from specdeploy_mechanisms._common import options, tree_depth

if TYPE_CHECKING:
    from specdeploy_mechanisms._options import MedusaOptions


class Medusa(Mechanism):
    name = "medusa"
    summary = "Medusa heads propose a static tree; engine backend only (TRT-LLM <= 1.2.x)"
    Options = options("MedusaOptions")
    needs_draft_model = True
    chain = False
    support = {"tensorrt": ("1.2",)}
    max_draft_len = 63
    default_draft_len = 4

    def fixed_draft_len(self, options: MedusaOptions) -> int | None:
        """The engine's max_draft_len is the number of tree nodes when a tree is given."""
        return len(options.choices) if options.choices else None

    def check(self, ctx: CheckContext) -> Iterator[Issue]:
        opts: MedusaOptions = ctx.options
        depth = tree_depth(opts.choices)
        if depth > opts.num_heads:
            yield ctx.issue("options.choices", f"choice depth {depth} exceeds num_heads {opts.num_heads}")
        if opts.choices and any(i < 0 for path in opts.choices for i in path):
            yield ctx.issue("options.choices", "choice indices must be >= 0")
        draft_len, fixed = ctx.profile.speculative.draft_len, self.fixed_draft_len(opts)
        if fixed is not None and isinstance(draft_len, int) and draft_len != fixed:
            yield ctx.issue(
                "draft_len",
                f"a Medusa tree of {fixed} nodes drafts {fixed} tokens, not {draft_len}",
                f"set draft_len: {fixed}",
            )
