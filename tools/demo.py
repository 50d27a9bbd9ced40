"""The embedded default end to end (what `make demo` runs), on any machine, no GPU, no hub access.

Phases: build (fetch -> tune by measurement on the CPU reference runtime -> emit -> render -> check),
serve (a real tritonserver on 127.0.0.1 with the rendered `reference` repository), ask (one chat
request through the Triton client), report. Each phase is timed; `bench/demo.py` records them.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

PROFILE = "cpu-smollm2"
QUESTION = "In two sentences: why does speculative decoding make LLM inference faster?"
COMPARE_PLAIN = ("speculative.mechanism=none", "speculative.draft_model=null")
COMPARE_FORCED = ("speculative.draft_len=2",)


def say(message: str) -> None:
    print(f"[demo] {message}", file=sys.stderr, flush=True)


def timed(phases: dict[str, float], name: str, fn: Callable[[], Any]) -> Any:
    say(f"--- {name} ---")
    start = time.perf_counter()
    try:
        return fn()
    finally:
        phases[name] = round(time.perf_counter() - start, 2)
        say(f"{name}: {phases[name]:.1f} s")


def speeds(result: dict[str, Any]) -> dict[str, Any]:
    """At concurrency 1, as the tuner measured: plain tokens/s, the best speculative K's, and what it chose."""
    first = min(result.get("decisions", []), key=lambda d: d["concurrency"], default=None)
    if first is None:
        return {}
    measured = {int(k): v["median"] for k, v in first["candidates"].items() if int(k) > 0}
    best = max(measured, key=measured.__getitem__, default=None)
    plain = first["candidates"].get("0", {}).get("median", first["baseline"])
    return {
        "concurrency": first["concurrency"],
        "chosen_k": first["k"],
        "reason": first["reason"],
        "tokens_per_s_plain": plain,
        "best_speculative_k": best,
        "tokens_per_s_speculative": measured.get(best) if best else None,
        "speedup": measured[best] / plain if best and plain else None,
    }


def run_demo(out: Path = Path("artifacts")) -> dict[str, Any]:
    from specdeploy import api
    from specdeploy.serve.local import start, stop

    phases: dict[str, float] = {}
    build = timed(phases, "build (fetch, tune, emit, render, check)", lambda: api.build(PROFILE, out=out, report=say))
    if not build.ok:
        raise SystemExit(f"build failed: see {build.artifact_dir}/manifest.json")
    artifact = build.artifact_dir
    repo, server = timed(phases, "start tritonserver and load the model", lambda: start(artifact, report=say))
    try:
        answer = timed(
            phases, "ask (one chat request through Triton)", lambda: api.ask(QUESTION, artifact=artifact, max_tokens=80)
        )
    finally:
        stop(repo, server)
    result_path = artifact / "tune" / "result.json"
    result = json.loads(result_path.read_text()) if result_path.is_file() else {}
    lock = json.loads((artifact / "specdeploy.lock").read_text())
    schedule = lock.get("tuned", {}).get("schedule") or {}
    served_k = int(schedule[min(schedule, key=int)]) if schedule else 0
    # The other side of the comparison: plain decoding when the served answer was speculative, else speculation
    # forced on; greedy speculation is lossless, so both must give the same text.
    sets, label = (COMPARE_PLAIN, "speculation off") if served_k else (COMPARE_FORCED, "speculation forced at K = 2")
    other = timed(phases, f"compare (same question, {label}, in process)",
                  lambda: api.generate(PROFILE, QUESTION, sets, max_tokens=80))
    summary = {
        "question": QUESTION,
        "answer": answer.get("text_output"),
        "served_tokens_per_s": answer.get("tokens_per_s"),
        "served_acceptance": answer.get("acceptance_rate"),
        "served_draft_len": served_k,
        "compare": {
            "label": label,
            "mechanism": other["mechanism"],
            "draft_len": other["draft_len"],
            "same_text": other["text"] == answer.get("text_output"),
            "tokens_per_s": other["stats"]["tokens_per_s"],
            "acceptance": other["stats"]["acceptance_rate"],
        },
        "measured": speeds(result),
        "schedule": schedule,
        "max_concurrency": lock.get("tuned", {}).get("max_concurrency"),
        "report": str(artifact / "tune" / "report.html"),
        "artifact": str(artifact),
        "phases_s": phases,
        "total_s": round(sum(phases.values()), 2),
    }
    return summary


def show(summary: dict[str, Any]) -> None:
    m, f = summary["measured"], summary["compare"]
    print(f"\nQ: {summary['question']}\nA: {summary['answer']}\n")
    if m and m["best_speculative_k"]:
        print(f"measured on this CPU at concurrency {m['concurrency']}: {m['tokens_per_s_plain']:.1f} tokens/s "
              f"without speculation, {m['tokens_per_s_speculative']:.1f} with K = {m['best_speculative_k']} "
              f"({m['speedup']:.2f}x); the tuner chose K = {m['chosen_k']} ({m['reason']})")
    served = f"K = {summary['served_draft_len']}" if summary["served_draft_len"] else "speculation off"
    print(f"served request ({served}): {summary['served_tokens_per_s']:.1f} tokens/s, "
          f"acceptance {summary['served_acceptance']:.2f}")
    print(f"{f['label']}: {'identical' if f['same_text'] else 'DIFFERENT'} answer, "
          f"{f['tokens_per_s']:.1f} tokens/s, acceptance {f['acceptance']:.2f}")
    print(f"schedule (concurrency -> draft length): {summary['schedule']}; "
          f"speculation off above: {summary['max_concurrency']}")
    print(f"report: {summary['report']}\nartifact: {summary['artifact']}")
    print("phases: " + ", ".join(f"{k} {v:.0f} s" for k, v in summary["phases_s"].items())
          + f"; total {summary['total_s']:.0f} s")


if __name__ == "__main__":
    show(run_demo())
