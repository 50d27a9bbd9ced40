"""Predicted goodput per (concurrency, K) and the schedule it implies (docs/design/draft-length.md §1.3).

    T(B, K)  = draft(B, K) + verify(B, T = K + 1) + overheads      step_seconds
    user tok/s = E[AL](K) / T(B, K)   system tok/s = B x user tok/s   ITL = T(B, K) / E[AL](K)
    speedup  = E[AL](K) x T(B, 0) / T(B, K)                        (K = 0 is plain decoding, always a candidate)

Any object with `step_seconds(batch, k)` is a timer: `AnalyticTimer` (the cost model), `ConstantTimer`
(Leviathan et al.'s constant-cost world), or a tuner's table of measured step times.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Protocol

from specdeploy.metrics import OUTPUT_THROUGHPUT, PER_USER_THROUGHPUT, key
from specdeploy.perfmodel.acceptance import AcceptanceProfile
from specdeploy.perfmodel.cost import Efficiency, StepCost, forward_cost
from specdeploy.perfmodel.drafters import DraftContext, draft_passes
from specdeploy.perfmodel.drafters import draft_seconds as _drafting
from specdeploy.perfmodel.record import tree_gamma
from specdeploy.resolve.gpus import GpuSpec
from specdeploy.resolve.model_spec import ModelSpec


class StepTimer(Protocol):
    def step_seconds(self, batch: int, k: int) -> float: ...


@dataclass(frozen=True)
class ConstantTimer:
    """Verification costs the same for any K; each drafted token costs `draft_ratio` of a target step."""

    target_s: float = 1.0
    draft_ratio: float = 0.05

    def step_seconds(self, batch: int, k: int) -> float:
        return self.target_s * (1.0 + k * self.draft_ratio)


@dataclass(frozen=True)
class Tree:
    """A draft tree (SGLang's speculative_num_steps / eagle_topk / num_draft_tokens): `steps` drafter passes over
    `topk` branches each, `tokens` tree nodes verified in one target forward (the root token included)."""

    steps: int
    topk: int
    tokens: int

    def depth(self) -> int:
        """How deep an accepted path can go: the steps, but no more than the drafted nodes (tokens - 1)."""
        return max(1, min(self.steps, self.tokens - 1))

    def width(self) -> float:
        """Drafted candidates per depth the verified tree keeps: min(topk, (tokens - 1) / steps), at least 1."""
        return max(1.0, min(float(self.topk), (self.tokens - 1) / max(1, self.steps)))

    def effective_width(self, gamma: float | None = None) -> float:
        """Independent candidates per depth the width is worth: width ** gamma. Below the top one a depth's
        candidates miss together far more often than independently; gamma is fitted on published tree ALs
        (record.tree_gamma, unless given)."""
        return self.width() ** (tree_gamma() if gamma is None else gamma)

    def acceptance(self, chain: AcceptanceProfile, gamma: float | None = None) -> AcceptanceProfile:
        """The tree's acceptance from its drafter's chain: widened per depth, no deeper than its nodes."""
        wide = chain.widened(self.effective_width(gamma))
        return AcceptanceProfile(
            wide.prefix[: self.depth()], f"{wide.source}, at most {self.depth()} deep", chain.prior
        )


class AnalyticTimer:
    """The cost model as a timer: drafter (by mechanism) + target verification of B x (K + 1) tokens, or of a
    tree's nodes when `tree` is given (K is then the tree's depth)."""

    def __init__(
        self,
        target: ModelSpec,
        gpu: GpuSpec,
        *,
        mechanism: str = "none",
        draft: ModelSpec | None = None,
        quantization: str = "none",
        tp: int = 1,
        context: int = 2048,
        eff: Efficiency | None = None,
        ep: int = 1,
        tree: Tree | None = None,
    ) -> None:
        self.target, self.gpu, self.mechanism, self.ep, self.tree = target, gpu, mechanism, ep, tree
        self.eff = eff or Efficiency()
        self.ctx = DraftContext(target, draft, gpu, self.eff, quantization, tp, context)
        self.step_seconds = lru_cache(maxsize=None)(self._step_seconds)  # type: ignore[method-assign]

    def __getstate__(self) -> dict[str, object]:
        """Picklable (a Ray worker measures with a copy): the per-instance cache is rebuilt there, not shipped."""
        return {k: v for k, v in self.__dict__.items() if k != "step_seconds"}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self.step_seconds = lru_cache(maxsize=None)(self._step_seconds)  # type: ignore[method-assign]

    def verify(self, batch: int, k: int) -> StepCost:
        tokens = self.tree.tokens if self.tree and k > 0 else k + 1
        return forward_cost(
            self.target,
            self.gpu,
            batch=batch,
            tokens=tokens,
            context=self.ctx.context,
            quantization=self.ctx.quantization,
            tp=self.ctx.tp,
            eff=self.eff,
            ep=self.ep,
        )

    def draft_seconds(self, batch: int, k: int) -> float:
        if k <= 0 or self.mechanism == "none":
            return 0.0
        rows = batch * (self.tree.topk if self.tree else 1)
        return _drafting(self.mechanism, self.ctx, rows, k) + draft_passes(self.mechanism, k) * self.eff.draft_pass_s

    def _step_seconds(self, batch: int, k: int) -> float:
        return self.draft_seconds(batch, k) + self.verify(batch, k).total_s


@dataclass(frozen=True)
class Point:
    """One predicted (concurrency, K): a step of `step_s` delivers `al` tokens to each of the requests."""

    concurrency: int
    k: int
    step_s: float
    al: float
    per_user: float
    """Output tokens per second one user sees."""
    total: float
    """Output tokens per second of all users together."""
    speedup: float

    def to_dict(self) -> dict[str, Any]:
        """Under the metric names (docs/design/metrics.md §2): ITL is the step, TPOT the step over AL."""
        return {
            "concurrency": self.concurrency,
            "k": self.k,
            "step_s": self.step_s,
            "al": self.al,
            OUTPUT_THROUGHPUT: self.total,
            PER_USER_THROUGHPUT: self.per_user,
            key("itl"): 1e3 * self.step_s,
            key("tpot"): 1e3 * self.step_s / self.al,
            "speedup": self.speedup,
        }


def point(timer: StepTimer, profile: AcceptanceProfile, concurrency: int, k: int) -> Point:
    step = timer.step_seconds(concurrency, k)
    al = profile.expected_al(k) if k else 1.0
    user = al / step
    return Point(concurrency, k, step, al, user, concurrency * user, al * timer.step_seconds(concurrency, 0) / step)


def best(points: list[Point], tie_tolerance: float = 0.0) -> Point:
    """The fastest K at one concurrency; candidates within `tie_tolerance` of the best go to the smaller K."""
    top = max(p.speedup for p in points)
    return min((p for p in points if p.speedup >= top * (1.0 - tie_tolerance)), key=lambda p: p.k)


def pays(timer: StepTimer, profile: AcceptanceProfile, concurrency: int, k_values: list[int]) -> bool:
    return any(point(timer, profile, concurrency, k).speedup > 1.0 + 1e-9 for k in k_values if k > 0)


def max_concurrency(timer: StepTimer, profile: AcceptanceProfile, k_values: list[int], limit: int = 4096) -> int | None:
    """The largest concurrency at which some K > 0 still beats plain decoding, before the first one where none
    does (0 if speculation never pays; None if it still pays at `limit`)."""
    if not pays(timer, profile, 1, k_values):
        return 0
    on, off = 1, 2
    while pays(timer, profile, off, k_values):
        if off >= limit:
            return None
        on, off = off, min(off * 2, limit)
    while off - on > 1:
        mid = (on + off) // 2
        on, off = (mid, off) if pays(timer, profile, mid, k_values) else (on, mid)
    return on


@dataclass(frozen=True)
class Curves:
    """Every (concurrency, K) point, the best K per concurrency, and where speculation stops paying."""

    points: list[Point]
    best: dict[int, Point]
    max_concurrency: int | None

    def schedule(self) -> list[dict[str, int]]:
        return [{"concurrency": c, "k": p.k} for c, p in sorted(self.best.items())]

    def clamped_to_first(self) -> Curves:
        """Each concurrency's best K capped at the lowest concurrency's: a schedule whose first K must be its
        largest (TRT-LLM 1.2.x, `tune.emit.schedule_of`) serves that."""
        cap = self.best[min(self.best)].k
        at = {(p.concurrency, p.k): p for p in self.points}
        return replace(self, best={c: at[(c, min(p.k, cap))] for c, p in self.best.items()})


def predict(
    timer: StepTimer,
    profile: AcceptanceProfile,
    concurrency: list[int],
    k_values: list[int],
    tie_tolerance: float = 0.0,
) -> Curves:
    ks = sorted({0, *k_values})
    points = [point(timer, profile, c, k) for c in concurrency for k in ks]
    chosen = {c: best([p for p in points if p.concurrency == c], tie_tolerance) for c in concurrency}
    return Curves(points, chosen, max_concurrency(timer, profile, ks))
