"""ReDrafter: an RNN drafter with beam search (engine backend, TRT-LLM <= 1.2.x)."""

from __future__ import annotations

from collections.abc import Iterator

from specdeploy.plugin import CheckContext, Mechanism
from specdeploy.profile.issues import Issue
from specdeploy_mechanisms._common import options


class Redrafter(Mechanism):
    name = "redrafter"
    summary = "recurrent drafter with beam search; engine backend only (explicit_draft_tokens)"
    Options = options("RedrafterOptions")
    needs_draft_model = True
    chain = False
    support = {"tensorrt": ("1.2",)}
    max_draft_len = 16
    default_draft_len = 4

    def check(self, ctx: CheckContext) -> Iterator[Issue]:
        """Its converter has no --pp_size (pipeline fixed at 1; TensorRT-LLM
        examples/redrafter/convert_checkpoint.py @ 31a9cd42fb507b50df39df4e03066fa370e4683c,
        docs/design/upstream-audit.md §A)."""
        if ctx.profile.hardware.pipeline_parallel != 1:
            yield Issue(("hardware", "pipeline_parallel"), "ReDrafter's converter has no pipeline parallelism "
                        "(pp fixed at 1)", "set hardware.pipeline_parallel: 1 (tensor_parallel is supported)")
