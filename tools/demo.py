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
    """Tokens/s with and without speculation at concurrency 1, as the tuner measured them."""
    first = min(result.get("decisions", []), key=lambda d: d["concurrency"], default=None)
    if first is None:
        return {}
    return {
        "concurrency": first["concurrency"],
        "k": first["k"],
        "tokens_per_s": first["objective"],
        "tokens_per_s_plain": first["baseline"],
        "speedup": first["speedup"],
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
    summary = {
        "question": QUESTION,
        "answer": answer.get("text_output"),
        "served_tokens_per_s": answer.get("tokens_per_s"),
        "served_acceptance": answer.get("acceptance_rate"),
        "measured": speeds(result),
        "schedule": lock.get("tuned", {}).get("schedule"),
        "max_concurrency": lock.get("tuned", {}).get("max_concurrency"),
        "report": str(artifact / "tune" / "report.html"),
        "artifact": str(artifact),
        "phases_s": phases,
        "total_s": round(sum(phases.values()), 2),
    }
    return summary


def show(summary: dict[str, Any]) -> None:
    m = summary["measured"]
    print(f"\nQ: {summary['question']}\nA: {summary['answer']}\n")
    if m:
        print(
            f"tokens/s at concurrency {m['concurrency']}: {m['tokens_per_s']:.1f} with speculation (K = {m['k']}) "
            f"vs {m['tokens_per_s_plain']:.1f} without -> {m['speedup']:.2f}x (measured on this CPU by the tuner)"
        )
    print(
        f"served request: {summary['served_tokens_per_s']:.1f} tokens/s, acceptance {summary['served_acceptance']:.2f}"
    )
    print(
        f"schedule (concurrency -> draft length): {summary['schedule']}; "
        f"speculation off above: {summary['max_concurrency']}"
    )
    print(f"report: {summary['report']}\nartifact: {summary['artifact']}")
    print(
        "phases: "
        + ", ".join(f"{k} {v:.0f} s" for k, v in summary["phases_s"].items())
        + f"; total {summary['total_s']:.0f} s"
    )


if __name__ == "__main__":
    show(run_demo())
