"""Medusa: extra decoding heads on the target propose a token tree (engine backend, TRT-LLM <= 1.2.x)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from specdeploy.engines.trtllm.declare import TrtllmEngineBuild
from specdeploy.issues import Issue
from specdeploy.plugin import AcceptancePrior, CheckContext, Mechanism
from specdeploy_mechanisms._common import options, tree_choices, tree_depth

if TYPE_CHECKING:
    from specdeploy_mechanisms._options import MedusaOptions


class Medusa(Mechanism):
    name = "medusa"
    summary = "Medusa heads propose a static tree; engine backend only (TRT-LLM <= 1.2.x)"
    Options = options("MedusaOptions")
    needs_draft_model = True
    chain = False
    engines = {
        "tensorrt": TrtllmEngineBuild(
            decoding_type={"1.2": "Medusa"},
            mode="medusa",
            convert=(
                "medusa/convert_checkpoint.py",
                lambda r: [
                    "--medusa_model_dir",
                    "${fetch.draft.path}",
                    "--num_medusa_heads",
                    str(r.loaded.options.num_heads),
                ],
            ),
            triton=lambda o: {"decoding_mode": "medusa", "medusa_choices": tree_choices(o.choices)},
            unconfirmed=("1.2.build_plugin_flags",),
            sources={"mode": "trtllm-build --speculative_decoding_mode choices (tables/trtllm-1.2.1.json)"},
        ),
    }
    max_draft_len = 63
    default_draft_len = 4
    drafting = "one_pass"
    training = "trained heads per target"
    prior = AcceptancePrior(
        rates=(0.60, 0.55, 0.50),
        basis="alpha 0.60 falling by 0.05 per head (Medusa 2.2-3.6x)",
        source="arXiv 2401.10774",
    )

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

    def draft_cost(self, ctx: Any, batch: int, k: int) -> float:
        """K heads in parallel, each a residual block (h x h) + an LM head (h x V), in one pass."""
        h = ctx.target.hidden
        if not k:
            return 0.0
        return float(ctx.forward(ctx.heads_only(ctx.target, h * h + h * ctx.target.vocab, k), batch=batch))
