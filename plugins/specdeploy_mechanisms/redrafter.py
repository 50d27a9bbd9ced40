"""ReDrafter: an RNN drafter with beam search (engine backend, TRT-LLM <= 1.2.x)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from specdeploy.engines.trtllm.declare import TrtllmEngineBuild
from specdeploy.issues import Issue
from specdeploy.plugin import AcceptancePrior, CheckContext, Mechanism
from specdeploy_mechanisms._common import options


class Redrafter(Mechanism):
    name = "redrafter"
    summary = "recurrent drafter with beam search; engine backend only (explicit_draft_tokens)"
    Options = options("RedrafterOptions")
    needs_draft_model = True
    chain = False
    engines = {
        "tensorrt": TrtllmEngineBuild(
            decoding_type={"1.2": "ReDrafter"},
            mode="explicit_draft_tokens",
            attach=(
                "ReDrafter",
                "redrafter/convert_checkpoint.py",
                lambda r: [
                    "--redrafter_num_beams",
                    str(r.loaded.options.num_beams),
                    "--redrafter_draft_len_per_beam",
                    str(r.draft_len),
                ],
            ),
            triton=lambda _o: {"decoding_mode": "redrafter"},
            engine_draft_len=lambda r: r.loaded.options.num_beams * r.draft_len,
            unconfirmed=("1.2.build_plugin_flags",),
            sources={
                "mode": "trtllm-build --speculative_decoding_mode choices (tables/trtllm-1.2.1.json)",
                "engine_draft_len": "tensorrt_llm/builder.py build() @ 1.2.1 (https://nvidia.github.io/"
                "TensorRT-LLM/1.2.1/_modules/tensorrt_llm/builder.html): max_draft_len = redrafter_num_beams "
                "* redrafter_draft_len_per_beam, whatever --max_draft_len said",
            },
        ),
    }
    max_draft_len = 16
    default_draft_len = 4
    training = "trained RNN drafter"
    prior = AcceptancePrior(rates=(0.70,), basis="i.i.d. alpha = 0.70 (no published figure)", source="assumed")

    def check(self, ctx: CheckContext) -> Iterator[Issue]:
        """Its converter has no --pp_size (pipeline fixed at 1; TensorRT-LLM
        examples/redrafter/convert_checkpoint.py @ 31a9cd42fb507b50df39df4e03066fa370e4683c,
        docs/design/upstream-audit.md §A)."""
        if ctx.profile.hardware.pipeline_parallel != 1:
            yield Issue(
                ("hardware", "pipeline_parallel"),
                "ReDrafter's converter has no pipeline parallelism (pp fixed at 1)",
                "set hardware.pipeline_parallel: 1 (tensor_parallel is supported)",
            )

    def draft_cost(self, ctx: Any, batch: int, k: int) -> float:
        """K sequential GRU steps (3 h^2) + LM head; beams are ignored."""
        h = ctx.target.hidden
        return float(k * ctx.forward(ctx.heads_only(ctx.target, 3 * h * h + h * ctx.target.vocab, 1), batch=batch))
