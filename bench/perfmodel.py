"""Figures for the performance model -> bench/results/perfmodel.json.

1. Predicted vs published throughput where public figures exist (ratio = predicted / published), with the
   uncalibrated default efficiencies and the shipped acceptance priors.
2. Calibration error on a measured CPU cost curve: a random-weight LlamaForCausalLM of SmolLM2-135M's shape
   (transformers, 2 threads, median of repeats, B x T x L grid), fitted on half the points, checked on the rest.
3. The advice lines for Llama-3.1-8B + EAGLE-3 on H200 (what `specdeploy plan` prints).

    .venv/bin/python bench/perfmodel.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import warnings
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from specdeploy.perfmodel import AnalyticTimer, Measured, advise, calibrate, predict, prior_profile, pseudo_gpu  # noqa: E402
from specdeploy.perfmodel.cost import forward_cost  # noqa: E402
from specdeploy.perfmodel.shapes import (  # noqa: E402
    EAGLE3_LLAMA_3_1_8B,
    LLAMA_3_1_8B,
    LLAMA_3_1_70B,
    LLAMA_3_2_1B,
    SMOLLM2_135M,
)
from specdeploy.resolve.gpus import GPUS  # noqa: E402


def published() -> list[dict]:
    rows = []
    h100, h200 = GPUS["h100-sxm"], GPUS["h200"]
    # SGLang docs, Llama-3.1-8B-Instruct, MT-bench, 1 x H100, batch 1; ~1k tokens of context assumed.
    base = 1.0 / forward_cost(LLAMA_3_1_8B, h100, batch=1, tokens=1, context=1024).total_s
    rows.append(
        {
            "figure": "Llama-3.1-8B decode, batch 1, H100, no speculation",
            "published_tps": 158.0,
            "predicted_tps": base,
            "ratio": base / 158.0,
            "source": "SGLang docs (speculative decoding page)",
        }
    )
    timer = AnalyticTimer(LLAMA_3_1_8B, h100, mechanism="eagle3", draft=EAGLE3_LLAMA_3_1_8B, context=1024)
    best = predict(timer, prior_profile("eagle3"), [1], list(range(1, 9))).best[1]
    rows.append(
        {
            "figure": "Llama-3.1-8B + EAGLE-3, batch 1, H100 (published: tree, 5 steps/topk 8; predicted: best "
            "chain K with the eagle3 prior)",
            "published_tps": 373.0,
            "predicted_tps": best.user_tps,
            "predicted_k": best.k,
            "predicted_al": best.al,
            "ratio": best.user_tps / 373.0,
            "source": "SGLang docs; arXiv 2503.01840",
        }
    )
    base70 = 1.0 / forward_cost(LLAMA_3_1_70B, h200, batch=1, tokens=1, context=1024, quantization="fp8").total_s
    rows.append(
        {
            "figure": "Llama-3.3-70B FP8 decode, batch 1, 1 x H200, no speculation (70B shape)",
            "published_tps": 51.14,
            "predicted_tps": base70,
            "ratio": base70 / 51.14,
            "source": "NVIDIA developer blog, Dec 2024 (draft/target on H200)",
        }
    )
    timer = AnalyticTimer(
        LLAMA_3_1_70B, h200, mechanism="draft_target", draft=LLAMA_3_2_1B, quantization="fp8", context=1024
    )
    best = predict(timer, prior_profile("draft_target"), [1], list(range(1, 9))).best[1]
    rows.append(
        {
            "figure": "Llama-3.3-70B FP8 + 1B draft, batch 1, 1 x H200 (draft model assumed Llama-3.2-1B)",
            "published_tps": 181.74,
            "predicted_tps": best.user_tps,
            "predicted_k": best.k,
            "ratio": best.user_tps / 181.74,
            "source": "NVIDIA developer blog, Dec 2024",
        }
    )
    return rows


def measure_cpu(quick: bool) -> tuple[list[Measured], list[Measured]]:
    """The reference runtime's own cost curve: SmolLM2-135M target forwards of B x T new tokens at context L,
    through the runtime's cache path (`specdeploy.runtime.probe_costs`, median of repeats, 1 torch thread)."""
    from specdeploy.runtime import load_pair, probe_costs

    warnings.filterwarnings("ignore", category=FutureWarning)
    pair = load_pair("HuggingFaceTB/SmolLM2-135M-Instruct")
    batches, tokens, contexts = ((1, 4), (1, 4), (64,)) if quick else ((1, 2, 4), (1, 2, 3, 5, 9), (64, 256))
    probe = probe_costs(pair, batch_sizes=batches, new_tokens=tokens, contexts=contexts, repeats=5)
    medians = [Measured(p["batch"], p["new_tokens"], p["context"], p["ms"] / 1000) for p in probe["target"]]
    return medians, medians


def fit_report(points: list[Measured]) -> dict:
    model, gpu = replace(SMOLLM2_135M, dtype="float32"), pseudo_gpu("cpu-2-threads")
    fit_all = calibrate(model, gpu, points)
    train, test = points[::2], points[1::2]
    fit_half = calibrate(model, gpu, train)
    from specdeploy.perfmodel.cost import forward_cost as cost

    held = [
        abs(cost(model, gpu, batch=p.batch, tokens=p.tokens, context=p.context, eff=fit_half.eff).total_s - p.seconds)
        / p.seconds
        for p in test
    ]
    return {
        "points": [p.__dict__ for p in points],
        "fit_all": fit_all.to_dict(),
        "holdout": {
            "fit_on": len(train),
            "tested_on": len(test),
            "mean_rel_err": statistics.mean(held),
            "max_rel_err": max(held),
        },
    }


def cpu_calibration(quick: bool) -> dict:
    """Fit the efficiency factors on the runtime's measured curve; report in-sample and held-out error."""
    medians, _ = measure_cpu(quick)
    return {
        "model": "SmolLM2-135M-Instruct (GGUF -> fp32) on the reference runtime, 1 torch thread, median of 5",
        "median": fit_report(medians),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
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
        "published": published(),
        "cpu_calibration": cpu_calibration(args.quick),
        "advice_llama8b_eagle3_h200": advice.lines(),
    }
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    for row in result["published"]:
        print(
            f"{row['ratio']:.2f}  predicted {row['predicted_tps']:.1f} vs {row['published_tps']} tok/s  {row['figure']}"
        )
    for stat in ("median",):
        cal = result["cpu_calibration"][stat]
        print(
            f"CPU fit ({stat}): mean {cal['fit_all']['mean_rel_err']:.1%} max {cal['fit_all']['max_rel_err']:.1%}; "
            f"holdout mean {cal['holdout']['mean_rel_err']:.1%} max {cal['holdout']['max_rel_err']:.1%}; "
            f"{cal['fit_all']['efficiency']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
