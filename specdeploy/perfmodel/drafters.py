"""Drafting cost per mechanism: seconds to propose K tokens for B sequences, in one table keyed by name.

A mechanism plugin may supply its own cost: if its `Mechanism` class defines
`draft_cost(self, ctx: DraftContext, batch: int, k: int) -> float | None`, that wins (None = use the table).
Unknown third-party mechanisms fall back to `generic`: a draft model if one is given, else c = 0.1 of a target
decode step per drafted token (vLLM PR #44336's profiled default was 0.1144).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from specdeploy.perfmodel.cost import Efficiency, forward_work, step_time
from specdeploy.resolve.gpus import GpuSpec
from specdeploy.resolve.model_spec import ModelSpec

EAGLE3_DRAFT_VOCAB = 32000
GENERIC_DRAFT_RATIO = 0.1


@dataclass(frozen=True)
class DraftContext:
    target: ModelSpec
    draft: ModelSpec | None
    gpu: GpuSpec
    eff: Efficiency
    quantization: str = "none"
    tp: int = 1
    context: int = 2048

    def forward(self, model: ModelSpec, *, batch: int, tokens: int = 1, lm_vocab: int | None = None,
                separate: bool = False) -> float:
        """One drafter forward; only a `separate` model (its own launches) pays the per-step overhead."""
        eff = self.eff if separate else replace(self.eff, step_overhead_s=0.0)
        work = forward_work(model, batch=batch, tokens=tokens, context=self.context, quantization=self.quantization,
                            tp=self.tp, lm_vocab=lm_vocab)
        return step_time(work, self.gpu, eff).total_s


def _layer(model: ModelSpec) -> ModelSpec:
    return replace(model, layers=1, dense_layers=0)


def _heads_only(model: ModelSpec, params_per_head: int, heads: int) -> ModelSpec:
    """A body-less pseudo-model whose 'LM head' holds `heads` x `params_per_head` weights (Medusa, ReDrafter)."""
    return replace(model, layers=0, dense_layers=0, experts=0, vocab=heads * params_per_head // model.hidden)


def eagle3(ctx: DraftContext, batch: int, k: int) -> float:
    """K sequential steps of one decoder layer + an LM head over the draft vocabulary."""
    head = (ctx.draft.draft_vocab if ctx.draft and ctx.draft.draft_vocab else EAGLE3_DRAFT_VOCAB)
    return k * ctx.forward(_layer(ctx.draft or ctx.target), batch=batch, lm_vocab=head)


def eagle(ctx: DraftContext, batch: int, k: int) -> float:
    """EAGLE-1/2: as EAGLE-3 with the full vocabulary."""
    return k * ctx.forward(_layer(ctx.draft or ctx.target), batch=batch)


def mtp(ctx: DraftContext, batch: int, k: int) -> float:
    """K sequential passes through one target-shaped MTP layer (MoE if the target is) + the shared LM head."""
    return k * ctx.forward(_layer(ctx.target), batch=batch)


def draft_target(ctx: DraftContext, batch: int, k: int) -> float:
    """K full forwards of a separate draft model."""
    if ctx.draft is None:
        return generic(ctx, batch, k)
    return k * ctx.forward(ctx.draft, batch=batch, separate=True)


def free(ctx: DraftContext, batch: int, k: int) -> float:
    """n-gram / suffix automaton / lookahead: host-side matching, no forward (lookahead's branch rides in T)."""
    return 0.0


def dflash(ctx: DraftContext, batch: int, k: int) -> float:
    """One block forward of the drafter over K positions (default drafter: 5 target-shaped layers)."""
    model = ctx.draft or replace(ctx.target, layers=min(5, ctx.target.layers), dense_layers=0)
    return ctx.forward(model, batch=batch, tokens=max(1, k))


def pard(ctx: DraftContext, batch: int, k: int) -> float:
    """One forward of a separate draft model over K mask tokens."""
    if ctx.draft is None:
        return generic(ctx, batch, k)
    return ctx.forward(ctx.draft, batch=batch, tokens=max(1, k), separate=True)


def medusa(ctx: DraftContext, batch: int, k: int) -> float:
    """K heads in parallel, each a residual block (h x h) + an LM head (h x V), in one pass."""
    h = ctx.target.hidden
    return ctx.forward(_heads_only(ctx.target, h * h + h * ctx.target.vocab, k), batch=batch) if k else 0.0


def redrafter(ctx: DraftContext, batch: int, k: int) -> float:
    """K sequential GRU steps (3 h^2) + LM head; beams are ignored."""
    h = ctx.target.hidden
    return k * ctx.forward(_heads_only(ctx.target, 3 * h * h + h * ctx.target.vocab, 1), batch=batch)


def generic(ctx: DraftContext, batch: int, k: int) -> float:
    if ctx.draft is not None:
        return k * ctx.forward(ctx.draft, batch=batch, separate=True)
    return k * GENERIC_DRAFT_RATIO * ctx.forward(ctx.target, batch=batch, separate=True)


DraftFn = Callable[[DraftContext, int, int], float]

DRAFTERS: dict[str, DraftFn] = {
    "eagle3": eagle3, "eagle": eagle, "mtp": mtp, "draft_target": draft_target, "ngram": free, "sa": free,
    "lookahead": free, "dflash": dflash, "pard": pard, "medusa": medusa, "redrafter": redrafter,
}

ONE_PASS = frozenset({"medusa", "dflash", "pard"})
"""Mechanisms that draft all K tokens in one pass; host-side matchers (ngram, sa, lookahead) make none."""
NO_PASS = frozenset({"ngram", "sa", "lookahead", "none"})


def draft_passes(mechanism: str, k: int) -> int:
    """Sequential drafter passes per step, each charged `Efficiency.draft_pass_s` (launch, sampling, hand-off):
    K for autoregressive drafters (eagle, eagle3, mtp, draft_target, redrafter, unknown), 1 for one-pass drafters."""
    if k <= 0 or mechanism in NO_PASS:
        return 0
    return 1 if mechanism in ONE_PASS else k


TRAINING: dict[str, str] = {
    "eagle3": "trained drafter head per target", "eagle": "trained drafter head per target",
    "mtp": "none (built into the target)", "draft_target": "none (off-the-shelf small model, same tokenizer)",
    "ngram": "none", "sa": "none", "lookahead": "none", "dflash": "trained block drafter per target",
    "pard": "adapted draft model", "medusa": "trained heads per target", "redrafter": "trained RNN drafter",
}
"""Guideline 5: what a mechanism costs before it serves."""


def drafter(mechanism: str) -> DraftFn:
    """The cost function of a mechanism: its plugin's `draft_cost` hook, else the table, else `generic`."""
    table = DRAFTERS.get(mechanism, generic)
    try:
        from specdeploy.plugin import find

        cls = find(mechanism)
    except Exception:  # an unloadable plugin set must not break a what-if
        cls = None
    if cls is None:
        return table
    plugin = cls()

    def hooked(ctx: DraftContext, batch: int, k: int) -> float:
        value = plugin.draft_cost(ctx, batch, k)
        return table(ctx, batch, k) if value is None else float(value)

    return hooked


def draft_seconds(mechanism: str, ctx: DraftContext, batch: int, k: int) -> float:
    """Seconds to draft K tokens for B sequences (0 for K = 0 or mechanism `none`)."""
    if k <= 0 or mechanism == "none":
        return 0.0
    return drafter(mechanism)(ctx, batch, k)
