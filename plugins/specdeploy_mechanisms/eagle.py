"""EAGLE-1/2: tree drafting from an EAGLE head (engine backend, TRT-LLM <= 1.2.x, Llama only)."""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import BaseModel, ConfigDict, Field

from specdeploy.plugin import CheckContext, Mechanism
from specdeploy.profile.issues import Issue
from specdeploy_mechanisms._common import tree_depth


class EagleOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    num_eagle_layers: int = Field(
        4, ge=1, le=16, description="Tree depth the engine is built for (`--num_eagle_layers`)."
    )
    max_non_leaves_per_layer: int = Field(10, ge=1, description="Non-leaf nodes kept per tree level.")
    choices: list[list[int]] | None = Field(
        None, description="Static tree (`eagle_choices`); depth <= num_eagle_layers."
    )


class Eagle(Mechanism):
    name = "eagle"
    summary = "EAGLE-1/2 tree drafting; engine backend, Llama targets only, greedy only"
    Options = EagleOptions
    needs_draft_model = True
    chain = False
    support = {"tensorrt": ("1.2",)}
    max_draft_len = 63

    def check(self, ctx: CheckContext) -> Iterator[Issue]:
        opts = ctx.options
        assert isinstance(opts, EagleOptions)
        if tree_depth(opts.choices) > opts.num_eagle_layers:
            yield ctx.issue(
                "options.choices",
                f"choice depth {tree_depth(opts.choices)} exceeds num_eagle_layers {opts.num_eagle_layers}",
            )
        if ctx.target and ctx.target.model_type != "llama":
            yield ctx.issue(
                "mechanism",
                f"EAGLE-1/2 engines support Llama targets only, not '{ctx.target.model_type}' (TensorRT-LLM #10396)",
                "use eagle3 on the PyTorch backend",
            )
