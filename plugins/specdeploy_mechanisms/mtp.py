"""Multi-token prediction: the target's own MTP layers draft (DeepSeek-V3/R1; PyTorch backend)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from specdeploy.engines.trtllm.declare import TrtllmDecoding
from specdeploy.engines.vllm.declare import VllmMethod
from specdeploy.issues import Issue
from specdeploy.plugin import AcceptancePrior, CheckContext, Mechanism
from specdeploy_mechanisms._common import options

if TYPE_CHECKING:
    from specdeploy_mechanisms._options import MtpOptions


class Mtp(Mechanism):
    name = "mtp"
    summary = "the target's multi-token-prediction layers draft; no separate drafter to serve"
    Options = options("MtpOptions")
    engines = {
        "pytorch": TrtllmDecoding(
            decoding_type={"1.2": "MTP", "1.3": "MTP"},
            length_keys=lambda line: line.mtp_length_keys,
            fields=lambda o, _line: _fields(o),
            range_notes=lambda line: ["K in " + " = ".join(line.mtp_length_keys)],
            one_model=lambda _o, line: line.name == "1.2",  # 1.2.1 docs: MTP is one-model only
            unconfirmed=("1.3.mtp_rc15_rc22",),
            sources={
                "decoding_type": "P121, P2 from_dict map; P8, P10, P11, P13, P14 Literal",
                "length": "mtp_length sources",
            },
        ),
        "vllm": VllmMethod(
            "mtp",
            "none",
            ignored={
                "vanilla": "vLLM runs each MTP layer it has and reuses them when K exceeds their count (K must "
                "then be a multiple of it)",
                "relaxed_topk": "only meaningful with relaxed acceptance",
                "relaxed_delta": "only meaningful with relaxed acceptance",
            },
            refused={"relaxed_acceptance": (False, "vLLM 0.32 has no relaxed acceptance")},
            note="the target's own MTP layers draft; only targets whose model_type vLLM maps to an MTP model type",
        ),
    }
    max_draft_len = 16
    default_draft_len = 3
    training = "none (built into the target)"
    prior = AcceptancePrior(
        sweep=("dsr1-mtp1-b200", "dsr1-mtp2-b200", "dsr1-mtp3-b200", "dsr1-mtp4-b200", "dsr1-mtp5-b200")
    )

    def check(self, ctx: CheckContext) -> Iterator[Issue]:
        opts: MtpOptions = ctx.options
        if ctx.target is None:
            return
        if ctx.target.mtp_layers < 1:
            yield ctx.issue(
                "mechanism",
                f"{ctx.target.name} has no MTP layers (num_nextn_predict_layers = 0)",
                "use eagle3 or draft_target for this model",
            )
        draft_len = ctx.profile.speculative.draft_len
        if opts.vanilla and isinstance(draft_len, int) and draft_len > ctx.target.mtp_layers:
            yield ctx.issue(
                "draft_len",
                f"vanilla MTP drafts one token per MTP layer: draft_len {draft_len} > {ctx.target.mtp_layers} layers",
                "set options.vanilla: false (MTP-Eagle reuses the layer)",
            )

    def draft_cost(self, ctx: Any, batch: int, k: int) -> float:
        """K sequential passes through one target-shaped MTP layer (MoE if the target is) + the shared LM head."""
        return float(k * ctx.forward(ctx.layer(ctx.target), batch=batch))

    def applies_to(self, target: Any) -> bool:
        return bool(target.mtp_layers >= 1)


def _fields(opts: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = {"use_mtp_vanilla": bool(getattr(opts, "vanilla", False))}
    if getattr(opts, "relaxed_acceptance", False):
        cfg.update(
            use_relaxed_acceptance_for_thinking=True, relaxed_topk=opts.relaxed_topk, relaxed_delta=opts.relaxed_delta
        )
    return cfg
