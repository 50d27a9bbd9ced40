"""The shipped drafters on chat and code prompts -> bench/results/drafters.json.

Which drafter the embedded default (`profiles/cpu/cpu-smollm2.yaml`) serves, and why: for each shipped drafter,
first-token acceptance, acceptance length and tokens/s against plain decoding through the same runtime loop,
greedy, concurrency 1, on MT-Bench first turns (every prompt evenly spaced over the 80 questions, all 8
categories) and HumanEval. Neither drafter saw any of these prompts in training (their TRAINING.md). The same
machine and the same prompts in one process, plain decoding measured once per set (2 shared cores: a
neighbour moves tokens/s by 10-20 %, acceptance not at all).

    .venv/bin/python bench/drafters.py [--mtbench 16] [--humaneval 8] [--max-new 48]   # 4-8 minutes
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from _common import write_result  # noqa: E402

from specdeploy.engines.reference.runtime import generate, load_pair  # noqa: E402
from specdeploy.engines.reference.runtime.models import DRAFTER_REF, HEAD_REF, SMOLLM2_REF  # noqa: E402
from specdeploy.metrics import OUTPUT_THROUGHPUT  # noqa: E402
from specdeploy.prompts import encode_prompt, sample_prompts  # noqa: E402
from specdeploy.tune.types import PLAIN_THROUGHPUT  # noqa: E402

RUNS = (("draft_target", DRAFTER_REF, (1,)), ("eagle3", HEAD_REF, (1, 2, 3)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mtbench", type=int, default=16)
    ap.add_argument("--humaneval", type=int, default=8)
    ap.add_argument("--max-new", type=int, default=48)
    args = ap.parse_args()
    sets = {
        "mtbench": sample_prompts("mt-bench", args.mtbench),
        "humaneval": sample_prompts("humaneval", args.humaneval),
    }
    pairs = {mechanism: load_pair(SMOLLM2_REF, ref, "cpu") for mechanism, ref, _ in RUNS}
    for mechanism, pair in pairs.items():  # warm-up: first calls pay one-off allocation
        generate(pair, [encode_prompt(pair.tokenizer, sets["mtbench"][0])], mechanism, 1, 1, 4)
    rows = []
    for name, records in sets.items():
        prompts = [encode_prompt(pairs["eagle3"].tokenizer, r) for r in records]
        plain_out, plain = generate(pairs["eagle3"], prompts, "none", 1, 1, args.max_new)
        for mechanism, ref, draft_lens in RUNS:
            pair = pairs[mechanism]
            for k in draft_lens:
                out, stats = generate(pair, prompts, mechanism, k, 1, args.max_new)
                row = {
                    "mechanism": mechanism,
                    "drafter": ref,
                    "set": name,
                    "prompts": len(prompts),
                    "K": k,
                    "first_token_acceptance": round(1 - stats.accept_hist[0], 4),
                    "acceptance_rate": round(stats.acceptance_rate, 4),
                    "acceptance_length": round(stats.acceptance_length, 3),
                    OUTPUT_THROUGHPUT: round(stats.tokens_per_s, 2),
                    PLAIN_THROUGHPUT: round(plain.tokens_per_s, 2),
                    "speedup": round(stats.tokens_per_s / plain.tokens_per_s, 3),
                    "identical_to_plain": out == plain_out,
                }
                rows.append(row)
                print(
                    f"{mechanism} {name} K={k}: first-token {row['first_token_acceptance']:.1%} "
                    f"AL {row['acceptance_length']:.2f} speedup {row['speedup']:.2f}x",
                    flush=True,
                )
    write_result(
        "drafters",
        {
            "setup": {
                "target": SMOLLM2_REF,
                "max_new_tokens": args.max_new,
                "concurrency": 1,
                "temperature": 0.0,
                "torch_threads": torch.get_num_threads(),
            },
            "runs": rows,
        },
    )


if __name__ == "__main__":
    main()
