"""Serving through Triton at concurrency 1..8: the reference model's in-flight batching, measured from outside.

Renders cpu-smollm2 (EAGLE-3 head, fixed K, `serving.max_batch_size` 8), starts a real tritonserver, and at
each concurrency keeps that many streaming gRPC requests in flight (MT-Bench prompts, a fixed output length:
`min_tokens` = `max_tokens`, as AIPerf's fixed output does). Per level: output tokens/s, requests/s, TTFT and
ITL percentiles (client side: TTFT = first response; ITL = gap between responses over the tokens each
carries), and the batch sizes the server reported. Goal (issue #21): c=8 at least 2.5x c=1.
With the clients' virtualenv (`bench/clients.sh`, default $SPECDEPLOY_CACHE/bench-clients) the same levels are
measured by perf_analyzer (gRPC streaming) and by AIPerf on the OpenAI chat endpoint (bench/serving_tools.py).
Needs `make install` (the triton extra); run it from the repository root.
"""

from __future__ import annotations

import argparse
import queue
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from _common import write_result

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from serving_tools import percentiles  # noqa: E402

from tests.triton.reference_client import stream  # noqa: E402

GOAL = 2.5


def level(url: str, prompts: list[str], concurrency: int, tokens: int, k: int) -> dict[str, Any]:
    """Keep `concurrency` requests in flight until every prompt is answered."""
    todo: queue.Queue[str] = queue.Queue()
    for p in prompts:
        todo.put(p)
    ttft: list[float] = []
    itl: list[float] = []
    batches: list[int] = []
    ks: list[int] = []
    generated = [0]
    lock = threading.Lock()

    def worker() -> None:
        while True:
            try:
                prompt = todo.get_nowait()
            except queue.Empty:
                return
            sent = time.monotonic()
            chunks = stream(url, "smollm2", {"text_input": prompt, "max_tokens": tokens, "min_tokens": tokens,
                                             "stream": True, "draft_len": k})
            with lock:
                ttft.append((chunks[0][0] - sent) * 1e3)
                for (before, _), (when, out) in zip(chunks, chunks[1:], strict=False):
                    n = len(out["output_ids"])
                    itl.extend([(when - before) * 1e3 / n] * n if n else [])
                generated[0] += sum(len(c["output_ids"]) for _, c in chunks)
                batches.extend(c["batch_size"] for _, c in chunks)
                ks.extend({c["draft_len"] for _, c in chunks})

    start = time.monotonic()
    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - start
    return {"concurrency": concurrency, "requests": len(prompts), "output_tokens": generated[0],
            "wall_s": round(wall, 2), "tokens_per_s": round(generated[0] / wall, 2),
            "requests_per_s": round(len(prompts) / wall, 3), "ttft_ms": percentiles(ttft), "itl_ms": percentiles(itl),
            "max_batch_seen": max(batches), "draft_lens": sorted(set(ks))}


def run_tools(clients: Path, server: Any, start_frontend: Any, tokenizer: Path, prompt: str, levels: list[int],
              tokens: int) -> dict[str, Any]:
    """perf_analyzer and AIPerf at every level (their own virtualenv), each with its tool version."""
    from serving_tools import aiperf, perf_analyzer

    server.frontend = start_frontend(server, "smollm2", 0)
    out: dict[str, Any] = {"perf_analyzer": {"client": "perf_analyzer (tritonclient 2.51.0 wheel), gRPC --streaming",
                                             "levels": []},
                           "aiperf": {"client": "aiperf 0.13.0, --endpoint-type chat --streaming, ignore_eos",
                                      "levels": []}}
    for c in levels:
        out["perf_analyzer"]["levels"].append(perf_analyzer(clients, server.grpc_url, prompt, c, tokens))
        out["aiperf"]["levels"].append(aiperf(clients, server.frontend.url, tokenizer, c, tokens))
        print(out["perf_analyzer"]["levels"][-1], out["aiperf"]["levels"][-1], file=sys.stderr, flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draft-len", type=int, default=1)
    parser.add_argument("--tokens", type=int, default=48)
    parser.add_argument("--levels", default="1,2,4,8")
    parser.add_argument("--clients", type=Path, default=None, help="the clients' virtualenv (bench/clients.sh)")
    parser.add_argument("--tool-tokens", type=int, default=32)
    args = parser.parse_args()

    from specdeploy.api import load_and_resolve
    from specdeploy.render.actions import render_resolved
    from specdeploy.render.backends import prepare_backends
    from specdeploy.render.context import RenderInputs
    from specdeploy.render.server import start_server
    from specdeploy.runtime.models import cache_dir, resolve_target_folder
    from specdeploy.runtime.prompts import load_mtbench
    from specdeploy.serve.local import start_frontend

    sets = (f"speculative.draft_len={max(args.draft_len, 1)}", "serving.max_batch_size=8")
    prompts = [r.turns[0] for r in load_mtbench()][:16]
    tmp = Path(tempfile.mkdtemp(prefix="specdeploy-serving-"))
    repo = render_resolved(load_and_resolve("cpu-smollm2", sets), tmp / "repo", inputs=RenderInputs()).out
    server = start_server(repo, prepare_backends(cache_dir()), tmp / "server.log")
    try:
        server.load("smollm2", timeout=600)
        level(server.grpc_url, prompts[:2], 2, 8, args.draft_len)  # warm-up
        levels = [int(c) for c in args.levels.split(",")]
        results = []
        for c in levels:
            results.append(level(server.grpc_url, prompts[: max(8, 2 * c)], c, args.tokens, args.draft_len))
            print(results[-1], file=sys.stderr, flush=True)
        clients = args.clients or cache_dir() / "bench-clients"
        tools: dict[str, Any] = {}
        if (clients / "bin" / "aiperf").exists():
            tokenizer = resolve_target_folder("HuggingFaceTB/SmolLM2-135M-Instruct")
            tools = run_tools(clients, server, start_frontend, tokenizer, prompts[0], levels, args.tool_tokens)
        else:
            print(f"no clients' virtualenv at {clients} (bench/clients.sh makes it): perf_analyzer and AIPerf skipped",
                  file=sys.stderr)
    finally:
        if server.frontend is not None:
            server.frontend.stop()
        server.stop()
    ratio = _ratio(results)
    ratios = {"own": round(ratio, 2), **{name: round(_ratio(tool["levels"]), 2) for name, tool in tools.items()}}
    path = write_result("serving", {
        "setup": {"profile": "cpu-smollm2", "sets": list(sets), "mechanism": "eagle3", "draft_len": args.draft_len,
                  "output_tokens": args.tokens, "dataset": "mt-bench", "client": "tritonclient gRPC streaming",
                  "server": "tritonserver 2.51 (nvidia-pytriton), reference model, decoupled"},
        "levels": results, **tools, "throughput_ratio_max_vs_1": ratios, "goal_ratio": GOAL,
        "goal_met": {name: r >= GOAL for name, r in ratios.items()},
        "note": "a shared 2-core machine: figures move by 10-20 % from run to run"})
    print(f"tokens/s at the highest level / at the lowest: {ratios} (goal {GOAL}x) -> {path}")


def _ratio(levels: list[dict[str, Any]]) -> float:
    by = {r["concurrency"]: r["tokens_per_s"] for r in levels}
    return by[max(by)] / by[min(by)]


if __name__ == "__main__":
    main()
