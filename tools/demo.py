"""The embedded default end to end (what `make demo` runs), on any machine, no GPU, no hub access.

Phases: build (fetch -> tune by measurement on the CPU reference runtime -> emit -> render -> check),
serve (a real tritonserver on 127.0.0.1 with the rendered `reference` repository), ask (the same chat
request through the Triton client twice: as served, with the tuned draft length, and the other side —
speculation at the tuner's best K when the tune turned it off, plain decoding when it kept it on), report.
Each phase is timed; `bench/demo.py` records them.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specdeploy.metrics import OUTPUT_THROUGHPUT, PER_USER_THROUGHPUT
from specdeploy.tune.types import PLAIN_THROUGHPUT

if TYPE_CHECKING:
    from specdeploy.serve.client import Answer

PROFILE = "cpu-smollm2"
QUESTION = "In two sentences: why does speculative decoding make LLM inference faster?"
MAX_TOKENS = 80
SPECULATIVE_THROUGHPUT = f"speculative_{OUTPUT_THROUGHPUT}"
"""The tuner's output token throughput at its best speculative K (PLAIN_THROUGHPUT: at K = 0)."""


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
    setup = result.get("setup", {})
    return {
        "dataset": setup.get("dataset"),
        "prompts": setup.get("prompts"),
        "concurrency": first["concurrency"],
        "chosen_k": first["k"],
        "reason": first["reason"],
        PLAIN_THROUGHPUT: plain,
        "best_speculative_k": best,
        SPECULATIVE_THROUGHPUT: measured.get(best) if best else None,
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
    result_path = artifact / "tune" / "result.json"
    result = json.loads(result_path.read_text()) if result_path.is_file() else {}
    measured = speeds(result)
    lock = json.loads((artifact / "specdeploy.lock").read_text())
    schedule = lock.get("tuned", {}).get("schedule") or {}
    served_k = int(schedule[min(schedule, key=int)]) if schedule else 0
    # The other side of the comparison, sent to the same server: plain decoding when the served answer was
    # speculative, else speculation at the best K the tuner measured. Greedy speculation is lossless: same text.
    other_k = 0 if served_k else int(measured.get("best_speculative_k") or 1)

    def ask_both() -> tuple[Answer, Answer]:
        api.ask("Hi", artifact=artifact, max_tokens=4)  # warm-up: the first request pays one-off allocations
        served = api.ask(QUESTION, artifact=artifact, max_tokens=MAX_TOKENS)
        say(f"served (draft length {served_k}): {served.outputs.get('tokens_per_s', 0):.1f} tokens/s")
        return served, api.ask(QUESTION, artifact=artifact, max_tokens=MAX_TOKENS, draft_len=other_k)

    repo, server = timed(phases, "start tritonserver and load the model", lambda: start(artifact, report=say))
    try:
        served, other = timed(
            phases, f"ask (the chat request through Triton, at draft length {served_k} and {other_k})", ask_both
        )
    finally:
        stop(repo, server)
    return {
        "question": QUESTION,
        "answer": served.outputs.get("text_output"),
        "served": _side(served),
        "other": {**_side(other), "same_text": other.outputs.get("text_output") == served.outputs.get("text_output")},
        "mechanism": result.get("setup", {}).get("mechanism"),
        "measured": measured,
        "schedule": schedule,
        "max_concurrency": lock.get("tuned", {}).get("max_concurrency"),
        "report": str(artifact / "tune" / "report.html"),
        "artifact": str(artifact),
        "phases_s": phases,
        "total_s": round(sum(phases.values()), 2),
    }


def _side(answer: Answer) -> dict[str, Any]:
    """What one Triton response says about its own decoding (its `tokens_per_s`: one request's, so one user's)."""
    out = answer.outputs
    return {
        "draft_len": out.get("draft_len"),
        PER_USER_THROUGHPUT: out.get("tokens_per_s"),
        "acceptance": out.get("acceptance_rate"),
    }


def show(summary: dict[str, Any]) -> None:
    m, served, other = summary["measured"], summary["served"], summary["other"]
    print(f"\nQ: {summary['question']}\nA: {summary['answer']}\n")
    if m and m["best_speculative_k"]:
        print(
            f"the tuner measured at concurrency {m['concurrency']} ({m['prompts']} {m['dataset']} prompts, "
            f"repeated): {m[PLAIN_THROUGHPUT]:.1f} tokens/s without speculation, "
            f"{m[SPECULATIVE_THROUGHPUT]:.1f} with {summary['mechanism']} at K = {m['best_speculative_k']} "
            f"({m['speedup']:.2f}x); it chose K = {m['chosen_k']} ({m['reason']})"
        )
    plain, spec = sorted((served, other), key=lambda side: side["draft_len"])
    print(
        f"this request through Triton: {spec[PER_USER_THROUGHPUT]:.1f} tokens/s at K = {spec['draft_len']} "
        f"(acceptance {spec['acceptance']:.2f}), {plain[PER_USER_THROUGHPUT]:.1f} without speculation; "
        f"{'identical' if other['same_text'] else 'DIFFERENT'} answers; served default K = {served['draft_len']} "
        "(one request each: noisy, the tuner's runs are the measurement)"
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
