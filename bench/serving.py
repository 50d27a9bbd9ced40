"""Serving through Triton at concurrency 1..8: the reference model's in-flight batching, measured from outside.

Renders cpu-smollm2 (EAGLE-3 head, `serving.max_batch_size` 8) twice and serves each in a real tritonserver:
once with a draft-length schedule over the live batch size (the product's point: speculate where it pays,
`--schedule`, default K=1 alone and plain decoding from 2 rows on) and once with one fixed K (`--draft-len`),
labelled, so a schedule cannot hide a result. Clients send no draft length: the served model chooses it.

At each concurrency c, c closed-loop clients each keep one streaming gRPC request in flight (MT-Bench prompts,
a fixed output length: `min_tokens` = `max_tokens`, as AIPerf's fixed output does) until `--waves` x c requests
(at least `--prompts`) are answered, after one warm-up wave at the highest level that is not counted. Per level:
the metrics under specdeploy's names (docs/design/metrics.md; client side: TTFT to the first response, TPOT per
request, ITL each gap between responses that carry tokens), the batch sizes and K the server reported, the load
average of the machine (a shared machine: compare the runs of one file, not files). Every answer is checked against the
sequential greedy answer to its prompt (the c=1 level of the same run, one request at a time) and across runs.
`ratio_c8_c1` is the throughput at the highest level over c=1 per client; goal (issue #21): at least 2.5x.
With the clients' virtualenv (`bench/clients.sh`, default $SPECDEPLOY_CACHE/bench-clients) the same levels are
measured by perf_analyzer (gRPC streaming) and by AIPerf on the OpenAI chat endpoint (bench/serving_tools.py).
Needs `make install` (the triton extra); run it from the repository root.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from _common import write_result

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from serving_tools import client_metrics  # noqa: E402

from tests.triton.reference_client import stream  # noqa: E402

GOAL = 2.5


def level(
    url: str, prompts: list[str], concurrency: int, requests: int, tokens: int
) -> tuple[dict[str, Any], dict[int, list[int]]]:
    """`concurrency` closed-loop clients until `requests` are answered (request j asks prompt j mod len);
    returns the level's figures and the answer (token ids) per prompt index."""
    streams: list[tuple[float, list[tuple[float, int]]]] = []
    batches: list[int] = []
    ks: Counter[int] = Counter()
    answers: dict[int, list[list[int]]] = {}
    next_j = [0]
    generated = [0]
    lock = threading.Lock()

    def client() -> None:
        while True:
            with lock:
                j = next_j[0]
                next_j[0] += 1
            if j >= requests:
                return
            sent = time.monotonic()
            chunks = stream(
                url,
                "smollm2",
                {"text_input": prompts[j % len(prompts)], "max_tokens": tokens, "min_tokens": tokens, "stream": True},
            )
            with lock:
                streams.append((sent, [(when, len(out["output_ids"])) for when, out in chunks]))
                ids = [t for _, c in chunks for t in c["output_ids"]]
                answers.setdefault(j % len(prompts), []).append(ids)
                generated[0] += len(ids)
                batches.extend(c["batch_size"] for _, c in chunks)
                ks.update(c["draft_len"] for _, c in chunks if c["output_ids"])

    load = os.getloadavg()[0]
    start = time.monotonic()
    threads = [threading.Thread(target=client) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - start
    consistent = all(all(a == seen[0] for a in seen) for seen in answers.values())
    figures = {
        **client_metrics(concurrency, requests, generated[0], wall, streams),
        "wall_s": round(wall, 2),
        "max_batch_seen": max(batches),
        "draft_len_steps": dict(sorted(ks.items())),
        "load_avg_1min": [round(load, 2), round(os.getloadavg()[0], 2)],
    }
    return figures, {p: seen[0] for p, seen in answers.items()} if consistent else {}


def serve_run(label: str, sets: tuple[str, ...], prompts: list[str], args: argparse.Namespace) -> dict[str, Any]:
    """Render with `sets`, start tritonserver, measure every level with every client, stop it."""
    from specdeploy.api import load_and_resolve
    from specdeploy.render.actions import render_resolved
    from specdeploy.render.backends import prepare_backends
    from specdeploy.render.model import RenderInputs
    from specdeploy.render.server import start_server
    from specdeploy.runtime_paths import cache_dir

    levels = [int(c) for c in args.levels.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="specdeploy-serving-"))
    repo = render_resolved(load_and_resolve("cpu-smollm2", sets), tmp / "repo", inputs=RenderInputs()).out
    server = start_server(repo, prepare_backends(cache_dir()), tmp / "server.log")
    results, answers = [], []
    try:
        server.load("smollm2", timeout=600)
        level(server.grpc_url, prompts, max(levels), max(levels), args.tokens)  # warm-up wave, not counted
        for c in levels:
            figures, seen = level(server.grpc_url, prompts, c, max(args.waves * c, len(prompts)), args.tokens)
            results.append(figures)
            answers.append(seen)
            print(label, figures, file=sys.stderr, flush=True)
        tools = _tools(server, prompts[0], levels, args)
    finally:
        if server.frontend is not None:
            server.frontend.stop()
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    reference = answers[0]  # c=1: one request at a time
    for figures, seen in zip(results, answers, strict=True):
        figures["identical_to_sequential_greedy"] = bool(seen) and all(reference.get(p) == a for p, a in seen.items())
    ratios = {"own": _ratio(results), **{name: _ratio(tool["levels"]) for name, tool in tools.items()}}
    return {
        "sets": list(sets),
        "levels": results,
        **tools,
        "ratio_c8_c1": ratios,
        "goal_met": {name: r >= GOAL for name, r in ratios.items()},
        "identical_to_sequential_greedy": all(r["identical_to_sequential_greedy"] for r in results),
        "answers": reference,
    }


def _tools(server: Any, prompt: str, levels: list[int], args: argparse.Namespace) -> dict[str, Any]:
    """perf_analyzer and AIPerf at every level (their own virtualenv), when it is there."""
    from specdeploy.engines.reference.runtime.models import resolve_target_folder
    from specdeploy.runtime_paths import cache_dir

    clients = args.clients or cache_dir() / "bench-clients"
    if not (clients / "bin" / "aiperf").exists():
        print(
            f"no clients' virtualenv at {clients} (bench/clients.sh makes it): perf_analyzer and AIPerf skipped",
            file=sys.stderr,
        )
        return {}
    from serving_tools import aiperf, perf_analyzer

    from specdeploy.serve.local import start_frontend

    tokenizer = resolve_target_folder("HuggingFaceTB/SmolLM2-135M-Instruct")
    server.frontend = start_frontend(server, "smollm2", 0)
    out: dict[str, Any] = {
        "perf_analyzer": {"client": "perf_analyzer (tritonclient 2.51.0 wheel), gRPC --streaming", "levels": []},
        "aiperf": {"client": "aiperf 0.13.0, --endpoint-type chat --streaming, ignore_eos", "levels": []},
    }
    for c in levels:
        out["perf_analyzer"]["levels"].append(perf_analyzer(clients, server.grpc_url, prompt, c, args.tokens))
        out["aiperf"]["levels"].append(aiperf(clients, server.frontend.url, tokenizer, c, args.tokens, args.waves))
        print(out["perf_analyzer"]["levels"][-1], out["aiperf"]["levels"][-1], file=sys.stderr, flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schedule", default="1:1,2:0", help="lower bounds `batch:K,...` (speculative.schedule)")
    parser.add_argument("--draft-len", type=int, default=1, help="the fixed-K run's K")
    parser.add_argument("--tokens", type=int, default=48)
    parser.add_argument("--levels", default="1,2,4,8")
    parser.add_argument("--waves", type=int, default=4, help="requests per level: waves x concurrency")
    parser.add_argument("--prompts", type=int, default=8, help="distinct MT-Bench prompts (and c=1's requests)")
    parser.add_argument("--runs", default="schedule,fixed", help="which runs: schedule, fixed or both")
    parser.add_argument("--clients", type=Path, default=None, help="the clients' virtualenv (bench/clients.sh)")
    args = parser.parse_args()
    if not args.levels.startswith("1,"):
        parser.error("--levels must start at 1: its answers are the sequential greedy reference")

    from specdeploy.prompts import load_mtbench

    prompts = [r.turns[0] for r in load_mtbench()][: args.prompts]
    schedule = {int(b): int(k) for b, k in (item.split(":") for item in args.schedule.split(","))}
    common = ("serving.max_batch_size=8",)
    plans = {
        "schedule": (
            f"schedule {schedule}",
            (
                f"speculative.draft_len={max(max(schedule.values()), 1)}",
                *(f"speculative.schedule.{b}={k}" for b, k in schedule.items()),
                *common,
            ),
        ),
        "fixed": (f"fixed K={args.draft_len}", (f"speculative.draft_len={args.draft_len}", *common)),
    }
    load = os.getloadavg()
    runs = {
        label: serve_run(label, sets, prompts, args) for label, sets in (plans[name] for name in args.runs.split(","))
    }
    answers = [run.pop("answers") for run in runs.values()]
    path = write_result(
        "serving",
        {
            "setup": {
                "profile": "cpu-smollm2",
                "mechanism": "eagle3",
                "output_tokens": args.tokens,
                "dataset": "mt-bench",
                "prompts": args.prompts,
                "waves": args.waves,
                "client": "tritonclient gRPC streaming, closed loop (c requests outstanding), one warm-up wave",
                "server": "tritonserver 2.51 (nvidia-pytriton), reference model, decoupled",
                "torch_threads": os.environ.get("SPECDEPLOY_THREADS", "1") + " (SPECDEPLOY_THREADS, load_pair)",
                "load_avg_at_start": [round(x, 2) for x in load],
            },
            "runs": runs,
            "same_answers_across_runs": all(a == answers[0] for a in answers),
            "goal_ratio": GOAL,
            "note": "a shared 2-core machine: figures move by 10-20 % from run to run; compare runs of one file",
        },
    )
    print({label: run["ratio_c8_c1"] for label, run in runs.items()}, f"(goal {GOAL}x) -> {path}")


def _ratio(levels: list[dict[str, Any]]) -> float:
    by = {r["concurrency"]: r["output_token_throughput"] for r in levels}
    return round(by[max(by)] / by[min(by)], 2)


if __name__ == "__main__":
    main()
