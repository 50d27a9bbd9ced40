"""EAGLE-1/2: tree drafting from an EAGLE head (engine backend, TRT-LLM <= 1.2.x, Llama only)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from specdeploy.engines.trtllm.declare import TrtllmEngineBuild
from specdeploy.engines.vllm.declare import VllmMethod
from specdeploy.issues import Issue
from specdeploy.plugin import AcceptancePrior, CheckContext, Mechanism
from specdeploy_mechanisms._common import options, tree_choices, tree_depth

if TYPE_CHECKING:
    from specdeploy_mechanisms._options import EagleOptions


class Eagle(Mechanism):
    name = "eagle"
    summary = "EAGLE-1/2 tree drafting; engine backend, Llama targets only, greedy only"
    Options = options("EagleOptions")
    needs_draft_model = True
    chain = False
    engines = {
        "tensorrt": TrtllmEngineBuild(
            decoding_type={"1.2": "Eagle"},
            mode="eagle",
            convert=(
                "eagle/convert_checkpoint.py",
                lambda r: [
                    "--eagle_model_dir",
                    "${fetch.draft.path}",
                    "--max_draft_len",
                    str(r.draft_len),
                    "--num_eagle_layers",
                    str(r.loaded.options.num_eagle_layers),
                    "--max_non_leaves_per_layer",
                    str(r.loaded.options.max_non_leaves_per_layer),
                ],
            ),
            triton=lambda o: {"decoding_mode": "eagle", "eagle_choices": tree_choices(o.choices)},
            unconfirmed=("1.2.build_plugin_flags",),
            sources={
                "mode": "trtllm-build --speculative_decoding_mode choices (tables/trtllm-1.2.1.json)",
                "max_non_leaves": "examples/eagle/convert_checkpoint.py @ 65b31db1: --max_non_leaves_per_layer "
                "(int, default 10), written to the checkpoint config",
            },
        ),
        "vllm": VllmMethod(
            "eagle",
            "required",
            ignored={
                "num_eagle_layers": "a TensorRT-LLM engine build setting",
                "max_non_leaves_per_layer": "a TensorRT-LLM engine build setting",
            },
            refused={"choices": (None, "vLLM 0.32 drafts a chain of num_speculative_tokens, no static tree")},
        ),
    }
    max_draft_len = 63
    training = "trained drafter head per target"
    prior = AcceptancePrior(
        row="l31-8b-eagle-k3-vllm-a100",
        note=" (MT-bench, vLLM's chain, EAGLE-1 head; the old alpha = 0.75 rested on EAGLE-2's tree speed-ups)",
    )

    def check(self, ctx: CheckContext) -> Iterator[Issue]:
        opts: EagleOptions = ctx.options
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

    def draft_cost(self, ctx: Any, batch: int, k: int) -> float:
        """EAGLE-1/2: as EAGLE-3 with the full vocabulary."""
        return float(k * ctx.forward(ctx.layer(ctx.draft or ctx.target), batch=batch))
