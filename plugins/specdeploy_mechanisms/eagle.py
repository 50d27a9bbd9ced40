"""EAGLE-1/2: tree drafting from an EAGLE head (engine backend, TRT-LLM <= 1.2.x, Llama only)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from specdeploy.plugin import CheckContext, Mechanism
from specdeploy.profile.issues import Issue
from specdeploy_mechanisms._common import options, tree_depth

if TYPE_CHECKING:
    from specdeploy_mechanisms._options import EagleOptions


class Eagle(Mechanism):
    name = "eagle"
    summary = "EAGLE-1/2 tree drafting; engine backend, Llama targets only, greedy only"
    Options = options("EagleOptions")
    needs_draft_model = True
    chain = False
    support = {"tensorrt": ("1.2",)}
    max_draft_len = 63

    def check(self, ctx: CheckContext) -> Iterator[Issue]:
        opts: EagleOptions = ctx.options
        if tree_depth(opts.choices) > opts.num_eagle_layers:
            yield ctx.issue(
                "options.choices",
                f"choice depth {tree_depth(opts.choices)} exceeds num_eagle_layers {opts.num_eagle_layers}",
            )
        if "max_non_leaves_per_layer" in ctx.profile.speculative.options:  # as the user wrote it
            yield Issue(("speculative", "options", "max_non_leaves_per_layer"),
                        "not passed to the engine: the EAGLE converter read (04a2cac) has no such flag "
                        "(UNCONFIRMED convert.eagle_max_non_leaves)", "remove it", severity="warning")
        if ctx.target and ctx.target.model_type != "llama":
            yield ctx.issue(
                "mechanism",
                f"EAGLE-1/2 engines support Llama targets only, not '{ctx.target.model_type}' (TensorRT-LLM #10396)",
                "use eagle3 on the PyTorch backend",
            )
