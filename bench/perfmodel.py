"""Figures for the performance model -> bench/results/perfmodel.json.

1. Calibration error on the reference runtime's measured CPU cost curve (SmolLM2-135M, `probe_costs`, B x T x L
   grid, median over shuffled rounds): the model as shipped and with the CPU's own terms, each fitted on all points
   and checked held out (every other point; the largest batch; the largest context).
2. The advice lines for Llama-3.1-8B + EAGLE-3 on H200 (what `specdeploy plan` prints).

The model against published results is bench/perfmodel_published.py (-> bench/results/perfmodel_published.json).

    .venv/bin/python bench/perfmodel.py [--quick] [--rounds 5] [--repeats 3]   # 10-15 minutes on 2 shared cores
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import warnings
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from specdeploy.perfmodel import (  # noqa: E402
    Calibration,
    Efficiency,
    Measured,
    advise,
    calibrate,
    pseudo_gpu,
)
from specdeploy.perfmodel.attention import TILE_ROWS  # noqa: E402
from specdeploy.perfmodel.calibrate import DEFAULT_FIT  # noqa: E402
from specdeploy.perfmodel.cost import forward_cost  # noqa: E402
from specdeploy.perfmodel.shapes import (  # noqa: E402
    EAGLE3_LLAMA_3_1_8B,
    LLAMA_3_1_8B,
    SMOLLM2_135M,
)
from specdeploy.resolve.gpus import GPUS  # noqa: E402
from specdeploy.resolve.model_spec import BYTES_PER_PARAM, ModelSpec  # noqa: E402

GRID = {"batch": (1, 2, 4), "tokens": (1, 2, 3, 5, 9), "context": (64, 256, 1024)}
QUICK_GRID = {"batch": (1, 2), "tokens": (1, 3), "context": (64, 256)}
WEIGHT_DTYPES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32"}
FORMS = {
    "roofline": {
        "terms": "GEMM and attention rooflines (128-row attention tiles) + per-layer overhead",
        "tile_rows": TILE_ROWS,
        "fit": DEFAULT_FIT,
    },
    "cpu": {
        "terms": "GEMM and attention rooflines (untiled attention, as the CPU SDPA kernel runs it) + per-layer "
        "overhead + per-cached-position overhead (DynamicCache copies the cache on every append)",
        "tile_rows": None,
        "fit": (*DEFAULT_FIT, "cache_overhead_s"),
    },
}
"""The model as shipped for GPUs, and with the terms the CPU runtime shows; both fitted to the same points."""


def weight_dtype(description: str) -> str:
    """The ModelSpec dtype of the weights the runtime runs, from `weights_description` ("fp16 (FBGEMM packed), fp32
    activations" or a torch dtype name): the GEMM roofline reads these bytes."""
    word = description.split()[0]
    dtype = WEIGHT_DTYPES.get(word, word)
    if dtype not in BYTES_PER_PARAM:
        raise ValueError(f"unknown weight format {description!r}")
    return dtype


def measure_cpu(
    grid: dict[str, tuple[int, ...]], rounds: int, repeats: int
) -> tuple[list[Measured], float | None, str]:
    """The reference runtime's own cost curve: SmolLM2-135M target forwards of B x T new tokens at context L
    through its cache path (`probe_costs`, 1 torch thread). The machine is shared, so each round visits the (B, L)
    cells and the T values in a fresh random order (load from other jobs does not line up with the grid) and a
    point is the median over rounds of the probe's median of `repeats`.

    Returns (points, mean |round - median| / median (None for one round), the runtime's weights description)."""
    from specdeploy.engines.reference.runtime import load_pair, probe_costs
    from specdeploy.engines.reference.runtime.cpu_kernels import weights_description

    warnings.filterwarnings("ignore", category=FutureWarning)
    pair = load_pair("HuggingFaceTB/SmolLM2-135M-Instruct")
    samples: dict[tuple[int, int, int], list[float]] = defaultdict(list)
    for seed in range(rounds):
        rng = random.Random(seed)
        cells = [(b, ctx) for b in grid["batch"] for ctx in grid["context"]]
        for batch, context in rng.sample(cells, len(cells)):
            tokens = tuple(rng.sample(grid["tokens"], len(grid["tokens"])))
            probe = probe_costs(
                pair, batch_sizes=(batch,), new_tokens=tokens, contexts=(context,), repeats=repeats, seed=seed
            )
            for p in probe["target"]:
                samples[(batch, p["new_tokens"], context)].append(p["ms"] / 1000)
    points = [Measured(*key, statistics.median(runs)) for key, runs in sorted(samples.items())]
    scatter = (
        statistics.mean(abs(s - p.seconds) / p.seconds for p in points for s in samples[(p.batch, p.tokens, p.context)])
        if rounds > 1
        else None
    )
    return points, scatter, weights_description(pair.target)


CPU = pseudo_gpu("cpu-1-thread")


def fitted(model: ModelSpec, points: list[Measured], form: dict) -> Calibration:
    return calibrate(model, CPU, points, tile_rows=form["tile_rows"], fit=form["fit"])


def predicted(model: ModelSpec, eff: Efficiency, points: list[Measured], form: dict) -> list[float]:
    return [
        forward_cost(
            model, CPU, batch=p.batch, tokens=p.tokens, context=p.context, eff=eff, tile_rows=form["tile_rows"]
        ).total_s
        for p in points
    ]


def held_out(model: ModelSpec, train: list[Measured], test: list[Measured], form: dict) -> dict:
    """Fit on `train`, relative error on `test`: the honest figure."""
    seconds = predicted(model, fitted(model, train, form).eff, test, form)
    err = [abs(s - p.seconds) / p.seconds for s, p in zip(seconds, test)]
    return {"fit_on": len(train), "tested_on": len(test), "mean_rel_err": statistics.mean(err), "max_rel_err": max(err)}


def fit_report(model: ModelSpec, points: list[Measured], form: dict) -> dict:
    """In-sample fit and three held-out splits: every other point, the largest batch, the largest context (the
    last two extrapolate)."""
    cal = fitted(model, points, form)
    splits = {"interleaved": (points[::2], points[1::2])}
    for axis in ("batch", "context"):
        top = max(getattr(p, axis) for p in points)
        splits[f"{axis} {top}"] = (
            [p for p in points if getattr(p, axis) != top],
            [p for p in points if getattr(p, axis) == top],
        )
    return {
        "terms": form["terms"],
        "fit_all": cal.to_dict(),
        "holdout": {name: held_out(model, *split, form) for name, split in splits.items()},
        "predicted_s": predicted(model, cal.eff, points, form),
    }


def cpu_calibration(quick: bool, rounds: int, repeats: int) -> dict:
    """Fit both model forms on the runtime's measured curve; report in-sample and held-out error."""
    grid = QUICK_GRID if quick else GRID
    points, scatter, weights = measure_cpu(grid, rounds, repeats)
    model = replace(SMOLLM2_135M, dtype=weight_dtype(weights))
    return {
        "model": f"SmolLM2-135M-Instruct on the reference runtime, weights {weights}, 1 torch thread",
        "dtype": model.dtype,
        "protocol": {"grid": grid, "rounds": rounds, "repeats": repeats, "round_scatter": scatter},
        "points": [p.__dict__ for p in points],
        "fits": {name: fit_report(model, points, form) for name, form in FORMS.items()},
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="a 2 x 2 x 2 grid, one round (seconds, for a smoke test)")
    parser.add_argument("--rounds", type=int, default=5, help="passes over the CPU grid (median over them)")
    parser.add_argument("--repeats", type=int, default=3, help="timed forwards per point and round")
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "perfmodel.json"))
    args = parser.parse_args()
    advice = advise(
        LLAMA_3_1_8B,
        GPUS["h200"],
        "eagle3",
        EAGLE3_LLAMA_3_1_8B,
        concurrency=[1, 4, 16, 64, 256],
        context=2048,
        k_max=8,
    )
    result = {
        "cpu_calibration": cpu_calibration(args.quick, 1 if args.quick else args.rounds, args.repeats),
        "advice_llama8b_eagle3_h200": advice.lines(),
    }
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    cpu = result["cpu_calibration"]
    scatter = cpu["protocol"]["round_scatter"]
    print(f"CPU points: {len(cpu['points'])}, round-to-round scatter {'-' if scatter is None else f'{scatter:.1%}'}")
    for name, fit in cpu["fits"].items():
        held = "; ".join(
            f"{split} held out {h['mean_rel_err']:.1%} (max {h['max_rel_err']:.0%})"
            for split, h in fit["holdout"].items()
        )
        print(
            f"CPU fit, {name} form: in-sample {fit['fit_all']['mean_rel_err']:.1%} "
            f"(max {fit['fit_all']['max_rel_err']:.0%}); {held}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
