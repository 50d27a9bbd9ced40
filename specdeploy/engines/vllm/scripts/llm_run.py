"""Run by specdeploy with vLLM's own Python (never imported by specdeploy): one offline `vllm.LLM` engine, the given
prompts in waves of each concurrency, greedy, and what it measured as JSON.

    python llm_run.py JOB.json OUT.json

JOB: model, dtype, max_model_len, max_tokens, concurrency (list), prompts ([{"text", "chat"}]), optional
speculative_config, enforce_eager, seed, repeats (rounds: every concurrency once per round). OUT: vllm_version,
start_s, and per (round, concurrency) the wall time, the CPU seconds of vLLM's processes, the load average, the token
ids of every answer, per-request TTFT and time per output token (engine timestamps), and the differences over the
wave of the engine's counters: spec-decode drafts / draft tokens / accepted / accepted per position, and the
inter-token-latency histogram (`LLM.get_metrics()`, `vllm/v1/metrics/reader.py @ v0.32.0`).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

SPEC = {
    "vllm:spec_decode_num_drafts": "drafts",
    "vllm:spec_decode_num_draft_tokens": "draft_tokens",
    "vllm:spec_decode_num_accepted_tokens": "accepted",
}
PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos"
ITL = "vllm:inter_token_latency_seconds"


def counters(llm: Any) -> dict[str, Any]:
    """The cumulative counters this driver reports, summed over engines."""
    out: dict[str, Any] = {v: 0 for v in SPEC.values()} | {
        "per_position": [],
        "itl": {"count": 0, "sum": 0.0, "buckets": {}},
    }
    for metric in llm.get_metrics():
        if metric.name in SPEC:
            out[SPEC[metric.name]] += metric.value
        elif metric.name == PER_POS:
            values = list(metric.values)
            pos = out["per_position"] + [0] * (len(values) - len(out["per_position"]))
            out["per_position"] = [a + b for a, b in zip(pos, values + [0] * (len(pos) - len(values)))]
        elif metric.name == ITL:
            out["itl"]["count"] += metric.count
            out["itl"]["sum"] += metric.sum
            for le, n in metric.buckets.items():
                out["itl"]["buckets"][le] = out["itl"]["buckets"].get(le, 0) + n
    return out


def difference(after: dict[str, Any], before: dict[str, Any]) -> dict[str, Any]:
    pos_b = before["per_position"] + [0] * (len(after["per_position"]) - len(before["per_position"]))
    return {
        **{k: after[k] - before[k] for k in SPEC.values()},
        "per_position": [a - b for a, b in zip(after["per_position"], pos_b)],
        "itl": {
            "count": after["itl"]["count"] - before["itl"]["count"],
            "sum": after["itl"]["sum"] - before["itl"]["sum"],
            "buckets": {le: n - before["itl"]["buckets"].get(le, 0) for le, n in after["itl"]["buckets"].items()},
        },
    }


def cpu_seconds() -> dict[str, float]:
    """User + system CPU seconds so far of this process and each of its children (vLLM's engine core, its
    worker), by process name."""
    import psutil

    out: dict[str, float] = {}
    for proc in [psutil.Process(), *psutil.Process().children(recursive=True)]:
        try:
            times, name = proc.cpu_times(), proc.name()
        except psutil.Error:  # a child that just exited
            continue
        out[name] = out.get(name, 0.0) + times.user + times.system
    return out


def wave(llm: Any, prompts: list[Any], params: Any, c: int) -> dict[str, Any]:
    """All prompts in waves of `c` requests; what they measured. The prefix cache is emptied first: every wave
    prefills its prompts, as the first one did (`LLM.reset_prefix_cache`)."""
    llm.reset_prefix_cache()
    before, cpu, load = counters(llm), cpu_seconds(), os.getloadavg()[0]
    wall, answers, ttft, tpot = 0.0, [], [], []
    for i in range(0, len(prompts), c):
        t0 = time.monotonic()
        outs = llm.generate(prompts[i : i + c], params, use_tqdm=False)
        wall += time.monotonic() - t0
        for out in outs:
            answers.append(list(out.outputs[0].token_ids))
            m = out.metrics
            if m is not None:
                ttft.append(m.first_token_latency)
                n = m.num_generation_tokens
                if n > 1:
                    tpot.append((m.last_token_ts - m.first_token_ts) / (n - 1))
    after = cpu_seconds()
    return {
        "concurrency": c,
        "wall_s": wall,
        "cpu_s": {n: t - cpu.get(n, 0.0) for n, t in after.items()},
        "load": [load, os.getloadavg()[0]],
        "requests": len(prompts),
        "token_ids": answers,
        "ttft_s": ttft,
        "tpot_s": tpot,
        **difference(counters(llm), before),
    }


def main(job_path: str, out_path: str) -> None:
    job = json.loads(Path(job_path).read_text(encoding="utf-8"))
    import vllm
    from vllm import LLM, SamplingParams

    start = time.monotonic()
    llm = LLM(
        model=job["model"],
        dtype=job.get("dtype", "float32"),
        max_model_len=job.get("max_model_len", 2048),
        speculative_config=job.get("speculative_config"),
        enforce_eager=job.get("enforce_eager", False),
        seed=job.get("seed", 0),
        disable_log_stats=False,
        max_num_seqs=max(job["concurrency"]),
    )
    start_s = time.monotonic() - start
    tokenizer = llm.get_tokenizer()
    prompts = []
    for p in job["prompts"]:
        if p.get("chat", True):
            ids = tokenizer.apply_chat_template(
                [{"role": "user", "content": p["text"]}], add_generation_prompt=True, tokenize=True
            )
            ids = ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "input_ids") else ids
        else:
            ids = tokenizer.encode(p["text"])
        prompts.append({"prompt_token_ids": list(ids)})
    params = SamplingParams(temperature=0.0, max_tokens=job["max_tokens"], ignore_eos=True)
    llm.generate(prompts[:1], SamplingParams(temperature=0.0, max_tokens=4), use_tqdm=False)  # warm-up
    runs = [
        {"repeat": r, **wave(llm, prompts, params, c)} for r in range(job.get("repeats", 1)) for c in job["concurrency"]
    ]
    result = {"vllm_version": vllm.__version__, "start_s": start_s, "runs": runs}
    Path(out_path).write_text(json.dumps(result), encoding="utf-8")


if __name__ == "__main__":  # vLLM starts worker processes that re-import this file
    main(sys.argv[1], sys.argv[2])
