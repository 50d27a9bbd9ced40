"""Draft/target: a small model of the same family drafts, the target verifies."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from specdeploy.engines.reference.declare import ReferenceDrafter
from specdeploy.engines.trtllm.declare import TrtllmDecoding, TrtllmEngineBuild
from specdeploy.engines.vllm.declare import VllmMethod
from specdeploy.issues import Issue
from specdeploy.plugin import AcceptancePrior, CheckContext, Mechanism
from specdeploy_mechanisms._common import same_vocabulary


class DraftTarget(Mechanism):
    name = "draft_target"
    summary = "a smaller model with the target's tokenizer drafts autoregressively"
    needs_draft_model = True
    engines = {
        "pytorch": TrtllmDecoding(
            decoding_type={"1.2": "DraftTarget", "1.3": "Draft_Target"},
            spelled_before={"1.3.0rc8": "DraftTarget"},
            overlap=lambda _o: False,
            unconfirmed=("1.3.draft_target_rc3_rc7", "1.3.draft_target_alias"),
            sources={
                "decoding_type": "P121 and P2 from_dict map key 'DraftTarget' (no 'Draft_Target' key); D6, D7 "
                "list 'DraftTarget'; Literal['Draft_Target'] in P8, P10, P11, P13, P14, P23"
            },
        ),
        "tensorrt": TrtllmEngineBuild(
            decoding_type={"1.2": "DraftTarget"},
            mode="draft_tokens_external",
            draft_engine=True,
            modelopt=True,
            unconfirmed=("1.2.build_plugin_flags",),
            sources={"mode": "trtllm-build --speculative_decoding_mode choices (tables/trtllm-1.2.1.json)"},
        ),
        "reference": ReferenceDrafter("specdeploy.engines.reference.runtime.drafters:ModelDrafter", reads="model"),
        "vllm": VllmMethod("draft_model", "required"),
    }
    default_draft_len = 4
    training = "none (off-the-shelf small model, same tokenizer)"
    prior = AcceptancePrior(
        rates=(0.70,),
        basis="i.i.d. alpha = 0.70; the record's draft-target rows publish "
        "speedups without draft length or AL, so no AL to derive it from",
        source="assumed",
    )

    def check(self, ctx: CheckContext) -> Iterator[Issue]:
        yield from same_vocabulary(ctx)
        if ctx.target and ctx.draft and ctx.draft.parameter_count() >= ctx.target.parameter_count():
            yield ctx.issue(
                "draft_model",
                f"the drafter ({ctx.draft.parameter_count() / 1e9:.2f} B parameters) is not "
                f"smaller than the target ({ctx.target.parameter_count() / 1e9:.2f} B)",
                "use a drafter 10-50x smaller than the target",
            )

    def draft_cost(self, ctx: Any, batch: int, k: int) -> float:
        """K full forwards of the separate draft model."""
        return float(ctx.generic(batch, k))
