"""Tuner figures (issue 7): the replay suite on the model backend with realistic noise, each scenario against an
exhaustive sweep (the oracle), plus grid search and hill-climb over the same measuring budget.

A scenario's *truth* is the performance model with perturbed efficiencies, a mis-modelled drafter cost and an
acceptance profile the tuner does not know; the tuner's prior is the uncalibrated model. Every measurement is noisy
(lognormal sigma 1%, 3% slow outliers at -15%, finite acceptance samples). Quality is scored on the noise-free
truth: objective(chosen K) / max_K objective, per concurrency. Cost = simulated device-seconds (model backend's
`cost_s`): the exhaustive sweep measures every (c, K in 0..8) with the same repeats.
Two sets of 24 scenarios (`SETS`): development (the strategy was tuned against it: in-sample) and held-out
(other combinations and seeds, fixed before the strategy changed, reported as it comes).

Reference runtime, for real: bench/tuner_reference.py (`--reference-only` runs only that part).

    .venv/bin/python bench/tuner.py [--skip-reference]   # -> bench/results/tuner.json
    .venv/bin/python bench/tuner.py --reference-only [--rounds N] [--clock cpu|wall] [--device cuda] [--out FILE]
"""

from __future__ import annotations

import json
import os
import random
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, machine, write_result  # noqa: E402
from tuner_reference import CLOCKS, KS, REPEATS, ROUNDS, reference_suite, show_reference  # noqa: E402

from specdeploy.perfmodel import AcceptanceProfile, AnalyticTimer, Efficiency, prior_profile  # noqa: E402
from specdeploy.perfmodel.cost import forward_cost  # noqa: E402
from specdeploy.resolve.gpus import GPUS  # noqa: E402
from specdeploy.resolve.hub import lookup_config  # noqa: E402
from specdeploy.tune.backends.model import ModelBackend, World  # noqa: E402
from specdeploy.tune.checkpoint import Checkpoint, Recorder  # noqa: E402
from specdeploy.tune.engine import drive, spent  # noqa: E402
from specdeploy.tune.objective import objective_value  # noqa: E402
from specdeploy.tune.prior import prior_for  # noqa: E402
from specdeploy.tune.setup import TuneSetup  # noqa: E402
from specdeploy.tune.strategies import STRATEGIES  # noqa: E402

CONCURRENCY = (1, 2, 4, 8, 16, 32, 64)
NOISE = 0.01
CONTEXT = 512 + 64
SCENARIOS = 24
DEV_SEED, HELD_OUT_SEED = 7, 8
SETS = {
    "development": f"scenarios 0-{SCENARIOS - 1}, efficiencies from seed {DEV_SEED}: the strategy was tuned "
    "against these (in-sample)",
    "held_out": f"the first {SCENARIOS} ids from {SCENARIOS} up whose GPU x pair x acceptance x objective is not "
    f"a development one, efficiencies from seed {HELD_OUT_SEED}, noise seeded by id; defined before "
    "the strategy changes and never looked at while tuning",
}
PAIRS = [  # (target, drafter, mechanism, chain)
    ("meta-llama/Llama-3.1-8B-Instruct", "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "eagle3", True),
    ("meta-llama/Llama-3.3-70B-Instruct", "meta-llama/Llama-3.2-1B-Instruct", "draft_target", True),
    ("Qwen/Qwen3-8B", None, "ngram", False),
    ("lmsys/vicuna-7b-v1.3", None, "medusa", False),
    ("Qwen/Qwen3-8B", "z-lab/Qwen3-8B-DFlash-b16", "dflash", False),
]
GPU_NAMES = ("h200", "h100-sxm", "b200", "a100-80gb", "l40s")
PROFILES = {
    "prior": None,
    "iid-0.85": AcceptanceProfile.iid(0.85, 16),
    "iid-0.55": AcceptanceProfile.iid(0.55, 16),
    "gemma-mtp-decay": AcceptanceProfile.from_conditional([0.84, 0.714, 0.65, 0.69] + [0.6] * 12),
}


@dataclass
class TrueTimer:
    """The truth: the model with other efficiencies, and the drafter costing `draft_scale` x what it predicts."""

    base: AnalyticTimer
    draft_scale: float

    def step_seconds(self, batch: int, k: int) -> float:
        return self.base.verify(batch, k).total_s + self.draft_scale * self.base.draft_seconds(batch, k)


def spec(name: str | None) -> Any:
    return lookup_config(name).spec if name else None


def combination(i: int) -> dict[str, Any]:
    """Scenario i's pair x GPU x acceptance profile x objective (its efficiencies are drawn separately)."""
    target, draft, mech, chain = PAIRS[i % len(PAIRS)]
    gpu = GPU_NAMES[(i // len(PAIRS) + i) % len(GPU_NAMES)]
    prof = list(PROFILES)[(i // 2) % len(PROFILES)]
    objective = ("throughput", "throughput", "latency", "goodput")[i % 4] if i >= 8 else "throughput"
    tp = 2 if "70B" in target and gpu in ("a100-80gb", "l40s", "h100-sxm") else 1
    return {
        "id": i,
        "target": target,
        "draft": draft,
        "mechanism": mech,
        "chain": chain,
        "gpu": gpu,
        "tp": tp,
        "acceptance": prof,
        "objective": objective,
    }


def combo_key(i: int) -> tuple[Any, ...]:
    return tuple(v for name, v in combination(i).items() if name != "id")


def scenario(i: int, rng: random.Random) -> dict[str, Any]:
    eff = Efficiency(
        compute=rng.uniform(0.45, 0.85),
        bandwidth=rng.uniform(0.55, 0.9),
        step_overhead_s=rng.uniform(30e-6, 400e-6),
        layer_overhead_s=rng.uniform(0, 4e-6),
    )
    return combination(i) | {"eff": eff, "draft_scale": rng.uniform(0.7, 1.6)}


def scenario_sets() -> dict[str, list[dict[str, Any]]]:
    """The development set is what the strategy was tuned against; the held-out set scores it honestly."""
    rng = random.Random(DEV_SEED)
    dev = [scenario(i, rng) for i in range(SCENARIOS)]
    seen = {combo_key(i) for i in range(SCENARIOS)}
    ids = [i for i in range(SCENARIOS, 10 * SCENARIOS) if combo_key(i) not in seen]
    rng = random.Random(HELD_OUT_SEED)
    return {"development": dev, "held_out": [scenario(i, rng) for i in ids[:SCENARIOS]]}


def build(sc: dict[str, Any], seed: int) -> tuple[World, TuneSetup, Any, ModelBackend]:
    gpu = GPUS[sc["gpu"]]
    make = lambda eff: AnalyticTimer(  # noqa: E731
        spec(sc["target"]),
        gpu,
        mechanism=sc["mechanism"],
        draft=spec(sc["draft"]),
        tp=sc["tp"],
        context=CONTEXT,
        eff=eff,
    )
    truth = make(sc["eff"])
    profile = PROFILES[sc["acceptance"]] or prior_profile(sc["mechanism"])
    world = World(
        TrueTimer(truth, sc["draft_scale"]),
        profile,
        lambda c: forward_cost(truth.target, gpu, batch=c, tokens=512, context=512, tp=sc["tp"], eff=sc["eff"]).total_s,
    )
    itl = None
    if sc["objective"] == "goodput":  # an SLA that binds somewhere in the middle of the range
        itl = 1.6 * world.point(16, 0)["itl_ms"]
    setup = TuneSetup(
        f"scenario-{sc['id']}",
        sc["mechanism"],
        sc["chain"],
        CONCURRENCY,
        KS,
        sc["objective"],
        p99_itl_ms=itl,
        repeats=REPEATS,
        prompts=32,
        output_len=128,
        line="1.3",
        max_batch_size=64,
    )
    return world, setup, prior_for(make), ModelBackend(world, noise=NOISE, seed=seed, prompts=32, output_len=128)


def truth_obj(world: World, setup: TuneSetup, c: int, k: int) -> float:
    return objective_value(world.point(c, k), setup.objective, setup.sla)


def run_one(sc: dict[str, Any], tmp: Path) -> dict[str, Any]:
    world, setup, prior, backend = build(sc, seed=sc["id"])
    sweep_cost = sum(REPEATS * backend._run_s(c, k) for c in CONCURRENCY for k in (0, *KS))
    oracle = {c: max(truth_obj(world, setup, c, k) for k in (0, *KS)) for c in CONCURRENCY}
    off = {c: truth_obj(world, setup, c, 0) for c in CONCURRENCY}
    described = {k: v for k, v in sc.items() if k != "eff"} | {"efficiency": sc["eff"].to_dict()}
    out: dict[str, Any] = {"scenario": described, "sweep_cost_s": sweep_cost}
    budget = None
    for name in ("factorized", "grid", "hillclimb", "sweep"):
        _, _, prior, backend = build(sc, seed=sc["id"] * 7 + len(name))
        strategy = STRATEGIES["grid" if name == "sweep" else name](setup, prior)
        rec = Recorder(backend, Checkpoint(tmp / f"{sc['id']}-{name}.jsonl", "x", fresh=True))
        drive(strategy, rec, budget_s=None if name in ("factorized", "sweep") else budget)
        cost = spent(rec)
        budget = budget or cost
        chosen = {c: d.k for c, d in strategy.decisions().items()}
        quality = {c: truth_obj(world, setup, c, k) / oracle[c] if oracle[c] else 1.0 for c, k in chosen.items()}
        slower = [c for c, k in chosen.items() if truth_obj(world, setup, c, k) < 0.99 * off[c]]
        out[name] = {
            "chosen": chosen,
            "quality": quality,
            "min_quality": min(quality.values()),
            "slower_than_off": slower,
            "cost_s": cost,
            "cost_fraction": cost / sweep_cost,
        }
    out["oracle_k"] = {c: max((0, *KS), key=lambda k: truth_obj(world, setup, c, k)) for c in CONCURRENCY}
    return out


def aggregate(rows: list[dict[str, Any]]) -> dict[str, Any]:
    agg = {}
    for name in ("factorized", "grid", "hillclimb", "sweep"):
        qs = [r[name]["min_quality"] for r in rows]
        agg[name] = {
            "scenarios_min_quality_ge_98pct": sum(q >= 0.98 for q in qs),
            "worst_min_quality": min(qs),
            "mean_quality": sum(sum(r[name]["quality"].values()) / len(r[name]["quality"]) for r in rows) / len(rows),
            "points_slower_than_off_gt_1pct": sum(len(r[name]["slower_than_off"]) for r in rows),
            "max_cost_fraction": max(r[name]["cost_fraction"] for r in rows),
            "mean_cost_fraction": sum(r[name]["cost_fraction"] for r in rows) / len(rows),
        }
    return agg


def main() -> None:
    import argparse
    import tempfile

    ap = argparse.ArgumentParser()
    ap.add_argument("--skip-reference", action="store_true", help="model-backend scenarios only")
    ap.add_argument("--reference-only", action="store_true", help="the real-runtime comparison only")
    ap.add_argument("--rounds", type=int, default=ROUNDS, help="truth rounds (the first REPEATS are the sweep)")
    ap.add_argument("--clock", choices=sorted(CLOCKS), default="cpu", help="what the strategies decide on")
    ap.add_argument("--quick", action="store_true", help="with --reference-only: c in {1, 4}, K in 0..4 (the GPU kit)")
    ap.add_argument("--device", default=None, help="the runtime's device (default: cuda when torch sees one)")
    ap.add_argument("--out", type=Path, default=None, help="with --reference-only: where its JSON goes")
    args = ap.parse_args()
    if args.reference_only:
        load = os.getloadavg()  # how shared the cores were: the spread of the truth depends on it
        with tempfile.TemporaryDirectory() as tmp:
            reference = reference_suite(Path(tmp), args.rounds, args.clock, args.device, args.quick)
        path = args.out or RESULTS / f"tuner-reference-{args.clock}{'-quick' if args.quick else ''}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        loads = {"before_1_5_15_min": load, "after_1_5_15_min": os.getloadavg(), "cores": os.cpu_count()}
        path.write_text(
            json.dumps(
                {"benchmark": "tuner-reference", "machine": machine() | {"load": loads}, **reference},
                indent=2,
                default=str,
            )
            + "\n"
        )
        print(path)
        show_reference(reference)
        return
    with tempfile.TemporaryDirectory() as tmp:
        rows = {part: [run_one(sc, Path(tmp)) for sc in scs] for part, scs in scenario_sets().items()}
        reference = None if args.skip_reference else reference_suite(Path(tmp), args.rounds, args.clock, args.device)
    agg = {part: aggregate(r) for part, r in rows.items()}
    payload = {
        "settings": {
            "concurrency": CONCURRENCY,
            "draft_lens": KS,
            "noise_sigma": NOISE,
            "repeats": REPEATS,
            "outlier_p": 0.03,
            "scenarios": {part: len(r) for part, r in rows.items()},
            "sets": SETS,
            "budget": "grid and hillclimb get the device-seconds factorized spent",
        },
        "summary": agg,
        "reference_runtime": reference or "skipped (--skip-reference)",
        "scenarios": rows,
    }
    print(write_result("tuner", payload))
    for part, parts in agg.items():
        for name, a in parts.items():
            print(f"{part:11s} {name:10s} {a}")
    if reference:
        show_reference(reference)


if __name__ == "__main__":
    main()
