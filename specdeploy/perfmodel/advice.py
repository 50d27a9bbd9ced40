"""The five draft-length guidelines (docs/design/draft-length.md §2) evaluated with the cost model, as numbers and
sentences.

The guidelines are hypotheses with no public source; every line states the numbers behind it so the tuner's
measurements can confirm or refute it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from specdeploy.metrics import OUTPUT_THROUGHPUT, PER_USER_THROUGHPUT, key, plain
from specdeploy.perfmodel.acceptance import AcceptanceProfile
from specdeploy.perfmodel.attention import plateau_draft_len, query_groups, tile_aligned_draft_lens
from specdeploy.perfmodel.cost import Efficiency, ridge_tokens
from specdeploy.perfmodel.drafters import drafter_names, training
from specdeploy.perfmodel.predict import AnalyticTimer, Curves, StepTimer, predict
from specdeploy.perfmodel.priors import prior_profile
from specdeploy.perfmodel.record import band, band_text
from specdeploy.plugin.registry import find
from specdeploy.resolve.gpus import GpuSpec
from specdeploy.resolve.model_spec import ModelSpec


def marginal_stop(timer: StepTimer, profile: AcceptanceProfile, batch: int, k_max: int) -> dict[str, float]:
    """Guideline 4: raise K while a_(K+1) / E[AL](K) > (T(K+1) - T(K)) / T(K); the K where that first fails."""
    k = 0
    while True:
        gain = profile.marginal(k) / profile.expected_al(k)
        t0, t1 = timer.step_seconds(batch, k), timer.step_seconds(batch, k + 1)
        if k >= k_max or gain <= (t1 - t0) / t0:
            return {"k": k, "gain": gain, "cost": (t1 - t0) / t0, "at_k_max": k >= k_max}
        k += 1


def schedule_text(curves: Curves) -> str:
    parts = [f"K = {p.k} at c = {c}" for c, p in sorted(curves.best.items())]
    return ", ".join(parts) + f", {off_text(curves.max_concurrency)}"


def off_text(max_concurrency: int | None) -> str:
    """Where speculation stops paying: 0 never pays, None still pays at the largest concurrency tried (4096)."""
    if max_concurrency == 0:
        return "speculation never pays"
    return "still pays at c = 4096" if max_concurrency is None else f"off above c = {max_concurrency}"


@dataclass(frozen=True)
class Advice:
    """What `advise` found; `lines()` for people, `to_dict()` for JSON."""

    setup: dict[str, Any]
    profile: AcceptanceProfile
    curves: Curves
    guidelines: dict[str, Any]
    mechanisms: list[dict[str, Any]] = field(default_factory=list)

    def band(self) -> str:
        """How sure the speedups are: bench/perfmodel_published.py's error on rows of this mechanism and GPU."""
        return band_text(self.setup["mechanism"], self.setup["gpu"])

    def throughput(self) -> list[dict[str, Any]]:
        """Predicted plain and speculative tokens/s per concurrency (the best K there), one record each."""
        base = {p.concurrency: p for p in self.curves.points if p.k == 0}
        err = band(self.setup["mechanism"], self.setup["gpu"])
        return [
            {
                "concurrency": c,
                "k": p.k,
                plain(OUTPUT_THROUGHPUT): base[c].total,
                OUTPUT_THROUGHPUT: p.total,
                plain(PER_USER_THROUGHPUT): base[c].per_user,
                PER_USER_THROUGHPUT: p.per_user,
                "speedup": p.speedup,
                "speedup_max_rel_err": err["max_rel_err"] if err else None,
            }
            for c, p in sorted(self.curves.best.items())
        ]

    def lines(self) -> list[str]:
        s, g = self.setup, self.guidelines
        out = [
            f"{s['target']} on {s['gpu']} ({s['quantization']}, TP{s['tp']}), {s['context_note']}, "
            f"mechanism {s['mechanism']}; acceptance: {self.profile.source}"
            + (" — a prior, confirm by measurement" if self.profile.prior else "")
        ]
        g1 = g["1"]
        out.append(
            f"G1: verification turns compute-bound at B × (K + 1) ≥ {g1['ridge_tokens']} tokens on this GPU "
            f"(ridge {g1['ridge_flop_per_byte']:.0f} FLOP/byte); "
            + "; ".join(
                f"c = {c}: K ≤ {min(k, s['k_max'])}" + ("" if k < s["k_max"] else " (any K)")
                for c, k in g1["memory_bound_k"].items()
            )
            + " stays memory-bound"
        )
        g2 = g["2"]
        out.append(
            f"G2: G = {g2['group']} → attention-bound optimum D = {g2['plateau_d']} "
            f"({g2['group']} × {g2['plateau_d'] + 1} query rows fill one 128-row tile); attention is "
            + ", ".join(f"{share:.0%} of the step at c = {c}" for c, share in g2["attention_share"].items())
            + (" (MLA: applicability unconfirmed)" if g2["mla"] else "")
        )
        out.append(
            "G3: tile-aligned larger drafts: D = "
            + (", ".join(map(str, g["3"]["aligned"])) or "none")
            + f" (G × (D + 1) a multiple of 128; k_max here is {s['k_max']})"
        )
        out.extend(
            f"G4: c = {c}: stop at K = {m['k']} (a_(K+1) / E[AL](K) = {m['gain']:.1%} vs ΔT/T = "
            f"{m['cost']:.1%})" + (" — k_max reached" if m["at_k_max"] else "")
            for c, m in g["4"].items()
        )
        out.append(
            "schedule: "
            + schedule_text(self.curves)
            + (
                f" (K = {', '.join(map(str, s['draft_lens']))} tried; each capped at c = {min(self.curves.best)}'s: "
                "this TensorRT-LLM line's schedule starts at its largest K)"
                if s["clamped_to_first"]
                else f" (K = {', '.join(map(str, s['draft_lens']))} tried)"
            )
        )
        out.append(
            "tokens/s (plain → speculative): "
            + "; ".join(
                f"c = {t['concurrency']}: {t[plain(OUTPUT_THROUGHPUT)]:.0f} → {t[OUTPUT_THROUGHPUT]:.0f} (K = {t['k']})"
                for t in self.throughput()
            )
            + f"; speedups {self.band()}"
        )
        out.append("G5: mechanisms (prior acceptance unless measured; draft c = draft/target step at c = 1):")
        out.extend(
            f"  {m['mechanism']:<13} K*={m['best_k_low']:<2} speedup {m['speedup_low']:.2f}× at c = "
            f"{m['low']}, {m['speedup_high']:.2f}× at c = {m['high']}; AL {m['al']:.2f}; c_draft "
            f"{m['draft_ratio']:.3f}; {off_text(m['max_concurrency'])}; training: {m['training']}; "
            f"{band_text(m['mechanism'], s['gpu'])}"
            for m in self.mechanisms
        )
        return out

    def records(self) -> list[dict[str, Any]]:
        """The same findings as `lines()`, one record per guideline and concurrency, for machines (`plan --json`)."""
        g, k_max, mech = self.guidelines, self.setup["k_max"], self.setup["mechanism"]
        out = [
            _record(
                "G1",
                mech,
                c,
                min(k, k_max),
                ridge_tokens=g["1"]["ridge_tokens"],
                memory_bound_k=k,
                ridge_flop_per_byte=g["1"]["ridge_flop_per_byte"],
            )
            for c, k in g["1"]["memory_bound_k"].items()
        ]
        out += [
            _record("G2", mech, c, g["2"]["plateau_d"], group=g["2"]["group"], attention_share=share, mla=g["2"]["mla"])
            for c, share in g["2"]["attention_share"].items()
        ]
        out.append(_record("G3", mech, None, None, group=g["2"]["group"], aligned=g["3"]["aligned"], k_max=k_max))
        out += [
            _record("G4", mech, c, m["k"], gain=m["gain"], cost=m["cost"], at_k_max=m["at_k_max"])
            for c, m in g["4"].items()
        ]
        out += [
            _record(
                "schedule",
                mech,
                c,
                p.k,
                speedup=p.speedup,
                acceptance_length=p.al,
                **{key("itl"): 1e3 * p.step_s, key("tpot"): 1e3 * p.step_s / p.al, PER_USER_THROUGHPUT: p.per_user},
                max_concurrency=self.curves.max_concurrency,
            )
            for c, p in sorted(self.curves.best.items())
        ]
        out += [
            _record(
                "G5",
                m["mechanism"],
                m["low"],
                m["best_k_low"],
                **{
                    k: m[k]
                    for k in (
                        "speedup_low",
                        "high",
                        "best_k_high",
                        "speedup_high",
                        "al",
                        "draft_ratio",
                        "max_concurrency",
                        "training",
                        "prior",
                    )
                },
            )
            for m in self.mechanisms
        ]
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "setup": self.setup,
            "acceptance": self.profile.to_dict(),
            "points": [p.to_dict() for p in self.curves.points],
            "schedule": self.curves.schedule(),
            "max_concurrency": self.curves.max_concurrency,
            "guidelines": {k: _jsonable(v) for k, v in self.guidelines.items()},
            "mechanisms": self.mechanisms,
            "throughput": self.throughput(),
            "error_band": band(self.setup["mechanism"], self.setup["gpu"]),
            "lines": self.lines(),
        }


def _record(guideline: str, mechanism: str, concurrency: int | None, k: int | None, **numbers: Any) -> dict[str, Any]:
    """One advice record: predicted by the performance model, never a measurement."""
    return {
        "guideline": guideline,
        "mechanism": mechanism,
        "concurrency": concurrency,
        "k": k,
        "numbers": numbers,
        "source": "performance model (predicted)",
    }


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return value


def compare_mechanisms(
    target: ModelSpec,
    gpu: GpuSpec,
    concurrency: list[int],
    *,
    context: int,
    k_max: int,
    quantization: str,
    tp: int,
    eff: Efficiency,
    chosen: str = "",
    draft: ModelSpec | None = None,
    profile: AcceptanceProfile | None = None,
    candidates: list[str] | None = None,
) -> list[dict[str, Any]]:
    """Guideline 5: every tabled mechanism at the lowest and highest concurrency, with its prior acceptance."""
    rows = []
    low, high = min(concurrency), max(concurrency)
    for name in candidates if candidates is not None else drafter_names():
        if (cls := find(name)) is not None and not cls().applies_to(target):
            continue
        timer = AnalyticTimer(
            target,
            gpu,
            mechanism=name,
            draft=draft if name == chosen else None,
            quantization=quantization,
            tp=tp,
            context=context,
            eff=eff,
        )
        prof = profile if (name == chosen and profile) else prior_profile(name)
        curves = predict(timer, prof, [low, high], list(range(1, k_max + 1)))
        b_low, b_high = curves.best[low], curves.best[high]
        rows.append(
            {
                "mechanism": name,
                "low": low,
                "high": high,
                "best_k_low": b_low.k,
                "speedup_low": b_low.speedup,
                "best_k_high": b_high.k,
                "speedup_high": b_high.speedup,
                "al": b_low.al,
                "draft_ratio": timer.draft_seconds(1, 1) / timer.step_seconds(1, 0),
                "max_concurrency": curves.max_concurrency,
                "training": training(name),
                "prior": prof.prior,
            }
        )
    return sorted(rows, key=lambda r: -r["speedup_low"])


def advise(
    target: ModelSpec,
    gpu: GpuSpec,
    mechanism: str,
    draft: ModelSpec | None = None,
    quantization: str = "none",
    tp: int = 1,
    concurrency: list[int] | None = None,
    context: int = 2048,
    k_max: int = 8,
    profile: AcceptanceProfile | None = None,
    eff: Efficiency | None = None,
    compare: bool = True,
    candidates: list[str] | None = None,
    draft_lens: list[int] | None = None,
    clamp_to_first: bool = False,
    context_note: str = "",
) -> Advice:
    """Predicted curves, schedule and the five guidelines for one deployment; no GPU needed. `draft_lens`: the K
    the tune would try (default 1..k_max); `clamp_to_first`: the TRT-LLM line caps every K at concurrency 1's."""
    concurrency = sorted(set(concurrency or [1, 4, 16, 64]))
    eff = eff or Efficiency()
    profile = profile or prior_profile(mechanism)
    timer = AnalyticTimer(
        target, gpu, mechanism=mechanism, draft=draft, quantization=quantization, tp=tp, context=context, eff=eff
    )
    curves = predict(timer, profile, concurrency, sorted(draft_lens or range(1, k_max + 1)))
    if clamp_to_first:
        curves = curves.clamped_to_first()
    ridge = ridge_tokens(target, gpu, quantization=quantization, tp=tp, eff=eff)
    group = query_groups(target, tp)
    share = {c: timer.verify(c, 0).attention_s / timer.step_seconds(c, 0) for c in concurrency}
    guidelines = {
        "1": {
            "ridge_tokens": ridge,
            "ridge_flop_per_byte": gpu.ridge_point,
            "memory_bound_k": {c: max(0, ridge // c - 1) for c in concurrency},
        },
        "2": {"group": group, "plateau_d": plateau_draft_len(group), "attention_share": share, "mla": target.is_mla},
        "3": {"aligned": tile_aligned_draft_lens(group, 3 * (plateau_draft_len(group) + 1) - 1)},
        "4": {c: marginal_stop(timer, profile, c, k_max) for c in concurrency},
    }
    setup = {
        "target": target.name,
        "gpu": gpu.name,
        "mechanism": mechanism,
        "draft": draft.name if draft else None,
        "quantization": target.dtype if quantization == "none" else quantization,
        "tp": tp,
        "context": context,
        "context_note": context_note or f"context {context} tokens",
        "k_max": k_max,
        "draft_lens": sorted(draft_lens or range(1, k_max + 1)),
        "clamped_to_first": clamp_to_first,
        "concurrency": concurrency,
        "efficiency": eff.to_dict(),
    }
    rows = (
        compare_mechanisms(
            target,
            gpu,
            concurrency,
            context=context,
            k_max=k_max,
            quantization=quantization,
            tp=tp,
            eff=eff,
            chosen=mechanism,
            draft=draft,
            profile=profile,
            candidates=candidates,
        )
        if compare
        else []
    )
    return Advice(setup, profile, curves, guidelines, rows)
