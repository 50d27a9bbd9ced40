"""The GPU kit's decode-mode section (issue 18 item 3): is CUDA-graph decoding faster, and still exact?

Plain decoding at c = 1 and 4 in each decode mode (`specdeploy.engines.reference.runtime.static_step`:
eager, static, graphs,
compile), each mode's greedy output compared with eager's at the same concurrency; the goal on an H200 with
SmolLM2-135M is c = 1 at ≥ 470 tokens/s (10x the 21 ms a token eager decode measured there). Capture modes run
one untimed pass over the same prompts first, so every (batch, tokens) bucket the timed pass meets is already
captured; its seconds are reported as `warmup_s`. A mode this device cannot run (graphs, compile on a CPU) is
recorded with the runtime's reason. `compile` runs last and alone (torch.compile may take a minute a shape).
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable
from typing import Any

from specdeploy.engines.reference.runtime import ModelPair, generate
from specdeploy.errors import UsageError
from specdeploy.metrics import OUTPUT_THROUGHPUT

GOAL_TOKENS_PER_S = 470.0  # c = 1, SmolLM2-135M, H200: 10x eager's 21 ms a token (issue 18)
CAPTURING = ("graphs", "compile")


def in_mode(pair: ModelPair, mode: str) -> ModelPair | str:
    """The pair decoding in `mode` (same models), or why this device cannot."""
    try:
        return dataclasses.replace(pair, decode=mode)
    except UsageError as exc:
        return exc.message


def timed(
    pair: ModelPair, prompts: list[list[int]], mechanism: str, k: int, concurrency: int, max_new: int
) -> tuple[list[list[int]], Any, float]:
    """(outputs, stats, warm-up seconds): capture modes warm over the whole run, eager and static over a sliver."""
    began = time.monotonic()
    if pair.decode in CAPTURING:
        generate(pair, prompts, mechanism, k, concurrency, max_new)
    else:
        generate(pair, prompts[:1], mechanism, max(k, 1), 1, 2)
    warm = time.monotonic() - began
    outputs, stats = generate(pair, prompts, mechanism, k, concurrency, max_new)
    return outputs, stats, warm


def plain_modes(
    pair: ModelPair,
    prompts: list[list[int]],
    plan: dict,
    modes: tuple[str, ...],
    deadline: float,
    rows: list[dict],
    eager: dict[int, list[list[int]]],
    save: Callable[[], None],
) -> None:
    """Plain decoding per mode and concurrency into `rows`; `eager` collects eager's outputs (the reference)."""
    last = 0.0
    for mode in modes:
        moded = in_mode(pair, mode)
        for concurrency in plan["concurrency"]:
            row: dict = {"mode": mode, "concurrency": concurrency}
            started = time.monotonic()
            if isinstance(moded, str):
                row["skipped"] = moded
            elif started + last > deadline:
                row["skipped"] = "budget"
            else:
                if mode == "compile":  # a hang or a minute-long compile: the phase cap ends it, the rows so far stay
                    rows.append({**row, "skipped": "running when the phase ended (compile did not finish)"})
                    save()
                    rows.pop()
                try:
                    row |= measure(moded, prompts, concurrency, plan["max_new_tokens"], eager)
                except Exception as exc:  # a mode failing on this device is a finding, not the end of the kit
                    row["skipped"] = failure(exc)
                last = time.monotonic() - started
            rows.append(row)
            save()


def failure(exc: BaseException) -> str:
    """Why a row failed, with the exception it interrupted: a failed CUDA-graph capture raises again from
    `capture_end` (torch.cuda.graph's exit), hiding the op that broke the capture in `__context__`. The whole
    traceback of anything but a refusal goes to stderr, which the device call's output tail shows."""
    import traceback

    if not isinstance(exc, UsageError):
        traceback.print_exception(exc, file=sys.stderr)
    causes: list[str] = []
    while exc is not None and len(causes) < 3:
        text = str(exc).strip().splitlines()
        causes.append(f"{type(exc).__name__}: {text[0] if text else ''}")
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return " <- during: ".join(causes)


def measure(
    pair: ModelPair, prompts: list[list[int]], concurrency: int, max_new: int, eager: dict[int, list[list[int]]]
) -> dict:
    outputs, stats, warm = timed(pair, prompts, "none", 0, concurrency, max_new)
    if pair.decode == "eager":
        eager[concurrency] = outputs
    row = {
        OUTPUT_THROUGHPUT: stats.tokens_per_s,
        "ms_per_step": 1e3 * stats.wall_time_s / max(stats.steps, 1),
        "warmup_s": warm,
        "identical_to_eager": outputs == eager[concurrency] if concurrency in eager else None,
    }
    if concurrency == 1:
        row["goal_470_met"] = stats.tokens_per_s >= GOAL_TOKENS_PER_S
    return row


def best_mode(rows: list[dict]) -> str:
    """The fastest mode at c = 1 whose output equalled eager's at every concurrency it ran (eager if none)."""
    exact = {r["mode"] for r in rows if OUTPUT_THROUGHPUT in r} - {
        r["mode"] for r in rows if r.get("identical_to_eager") is False
    }
    timed_c1 = [r for r in rows if r["mode"] in exact and r["concurrency"] == 1 and OUTPUT_THROUGHPUT in r]
    return max(timed_c1, key=lambda r: r[OUTPUT_THROUGHPUT])["mode"] if timed_c1 else "eager"


def table(rows: list[dict]) -> str:
    lines = ["  decode mode  c  tok/s     ms/step  warm-up s  identical"]
    for r in rows:
        if "skipped" in r:
            lines.append(f"  {r['mode']:<11} {r['concurrency']:>2}  skipped: {r['skipped'][:90]}")
        else:
            lines.append(
                f"  {r['mode']:<11} {r['concurrency']:>2}  {r[OUTPUT_THROUGHPUT]:<9.1f} {r['ms_per_step']:<8.2f} "
                f"{r['warmup_s']:<10.1f} {r['identical_to_eager']}"
            )
    return "\n".join(lines)
