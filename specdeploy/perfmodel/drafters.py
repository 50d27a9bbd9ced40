"""Drafting cost: seconds to propose K tokens for B sequences, as each mechanism's plugin declares it.

A mechanism describes its drafter in its `Mechanism.draft_cost(ctx, batch, k)` hook with the `DraftContext`
methods below (one forward of a model, a single layer of it, a body-less head); `drafting` says how many
sequential passes it makes. A mechanism without a cost (None) gets `generic`: a draft model if one is given,
else c = 0.1 of a target decode step per drafted token (vLLM PR #44336's profiled default was 0.1144).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from specdeploy.perfmodel.cost import Efficiency, forward_work, step_time
from specdeploy.plugin.base import Mechanism
from specdeploy.plugin.registry import find, mechanism_names
from specdeploy.resolve.gpus import GpuSpec
from specdeploy.resolve.model_spec import ModelSpec

GENERIC_DRAFT_RATIO = 0.1


@dataclass(frozen=True)
class DraftContext:
    """What a mechanism's `draft_cost` prices its drafter with."""

    target: ModelSpec
    draft: ModelSpec | None
    gpu: GpuSpec
    eff: Efficiency
    quantization: str = "none"
    tp: int = 1
    context: int = 2048

    def forward(
        self, model: ModelSpec, *, batch: int, tokens: int = 1, lm_vocab: int | None = None, separate: bool = False
    ) -> float:
        """One drafter forward; only a `separate` model (its own launches) pays the per-step overhead."""
        eff = self.eff if separate else replace(self.eff, step_overhead_s=0.0)
        work = forward_work(
            model,
            batch=batch,
            tokens=tokens,
            context=self.context,
            quantization=self.quantization,
            tp=self.tp,
            lm_vocab=lm_vocab,
        )
        return step_time(work, self.gpu, eff).total_s

    @staticmethod
    def layer(model: ModelSpec) -> ModelSpec:
        """One decoder layer of `model` with its LM head (EAGLE heads, MTP layers)."""
        return replace(model, layers=1, dense_layers=0)

    @staticmethod
    def heads_only(model: ModelSpec, params_per_head: int, heads: int) -> ModelSpec:
        """A body-less pseudo-model whose 'LM head' holds `heads` x `params_per_head` weights (Medusa, ReDrafter)."""
        return replace(model, layers=0, dense_layers=0, experts=0, vocab=heads * params_per_head // model.hidden)

    def generic(self, batch: int, k: int) -> float:
        """K forwards of the draft model when there is one, else a tenth of a target step per drafted token."""
        if self.draft is not None:
            return k * self.forward(self.draft, batch=batch, separate=True)
        return k * GENERIC_DRAFT_RATIO * self.forward(self.target, batch=batch, separate=True)


def drafter_names() -> list[str]:
    """The installed mechanisms that price their own drafter (the performance model's candidates)."""
    return [name for name in mechanism_names() if (cls := _plugin(name)) is not None and cls.prices_drafting()]


def draft_passes(mechanism: str, k: int) -> int:
    """Sequential drafter passes per step, each charged `Efficiency.draft_pass_s` (launch, sampling, hand-off):
    K for autoregressive drafters (and unknown ones), 1 for one-pass drafters, 0 for host-side matchers."""
    cls = _plugin(mechanism)
    drafting = cls.drafting if cls is not None else "sequential"
    if k <= 0 or mechanism == "none" or drafting == "none":
        return 0
    return 1 if drafting == "one_pass" else k


def training(mechanism: str) -> str:
    """Guideline 5: what a mechanism costs before it serves."""
    cls = _plugin(mechanism)
    return cls.training if cls is not None and cls.training else "unknown"


def draft_seconds(mechanism: str, ctx: DraftContext, batch: int, k: int) -> float:
    """Seconds to draft K tokens for B sequences (0 for K = 0 or mechanism `none`)."""
    if k <= 0 or mechanism == "none":
        return 0.0
    cls = _plugin(mechanism)
    value = cls().draft_cost(ctx, batch, k) if cls is not None else None
    return ctx.generic(batch, k) if value is None else float(value)


def _plugin(name: str) -> type[Mechanism] | None:
    try:
        return find(name)
    except Exception:  # an unloadable plugin set must not break a what-if
        return None
