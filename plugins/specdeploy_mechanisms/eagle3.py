"""EAGLE-3: a one-layer drafter fed with the target's hidden states (PyTorch backend)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from specdeploy.plugin import CheckContext, Mechanism
from specdeploy.profile.issues import Issue
from specdeploy_mechanisms._common import options

if TYPE_CHECKING:
    from specdeploy_mechanisms._options import Eagle3Options


class Eagle3(Mechanism):
    name = "eagle3"
    summary = "EAGLE-3 drafter head on the target's hidden states; high acceptance, cheap drafting"
    Options = options("Eagle3Options")
    needs_draft_model = True
    support = {"pytorch": ("1.2", "1.3"), "reference": ("cpu",)}
    default_draft_len = 3

    def check(self, ctx: CheckContext) -> Iterator[Issue]:
        opts: Eagle3Options = ctx.options
        if opts.dynamic_tree and ctx.line is not None and ctx.line.name == "1.2":
            yield ctx.issue(
                "options.dynamic_tree",
                "dynamic EAGLE-3 trees need TensorRT-LLM 1.3 or later",
                "set runtime.trtllm_version: 1.3.0 or drop dynamic_tree",
            )
        if ctx.target and ctx.draft:
            if ctx.draft.hidden != ctx.target.hidden:
                yield ctx.issue(
                    "draft_model",
                    f"EAGLE-3 drafter hidden size {ctx.draft.hidden} does not match the target's {ctx.target.hidden}",
                    "use the EAGLE-3 drafter trained for this target",
                )
            if ctx.draft.vocab and ctx.draft.vocab != ctx.target.vocab:
                yield ctx.issue(
                    "draft_model",
                    f"EAGLE-3 drafter vocab_size {ctx.draft.vocab} does not match the target's {ctx.target.vocab}",
                    "use the EAGLE-3 drafter trained for this target",
                )
        if opts.layers_to_capture and ctx.profile.runtime.backend == "reference":
            yield Issue(("speculative", "options", "layers_to_capture"),
                        "ignored on the reference backend: its EAGLE head reads the target layers it was trained on "
                        "(recorded in the drafter's specdeploy_drafter.json); this option is TensorRT-LLM's",
                        "drop it for the reference backend, or train a head on these layers (tools/train_eagle.py "
                        "--layers)", severity="warning")
        elif ctx.target and opts.layers_to_capture:
            bad = [i for i in opts.layers_to_capture if not -ctx.target.layers <= i < ctx.target.layers]
            if bad:
                yield ctx.issue(
                    "options.layers_to_capture", f"layers {bad} do not exist in a {ctx.target.layers}-layer target"
                )
