"""The standard clients for bench/serving.py, run from their own virtualenv (bench/clients.sh makes it):
perf_analyzer (gRPC streaming: the model is decoupled) and AIPerf (the OpenAI chat endpoint, streaming).
Each returns per concurrency the metrics under specdeploy's names (docs/design/metrics.md) as the tool measured
them: request and output token throughput, TTFT, TPOT and ITL."""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from specdeploy.metrics import STATS, THROUGHPUTS, distribution, key, measured


def client_metrics(
    concurrency: int, requests: int, tokens: int, wall_s: float, streams: list[tuple[float, list[tuple[float, int]]]]
) -> dict[str, Any]:
    """A closed-loop level as its client saw it: each stream is (sent, [(arrival, tokens in it), ...]) in
    seconds. TTFT: sent to first tokens; TPOT: first to last tokens over the tokens after the first; ITL: each
    gap between two arrivals that carried tokens (a speculative step sends several at once). Per user: the
    output token throughput over c, as the tune reports it; rounded to 0.001 for the result file."""
    ttft, tpot, itl = [], [], []
    for sent, arrivals in streams:
        got = [(when, n) for when, n in arrivals if n]
        if not got:
            continue
        ttft.append((got[0][0] - sent) * 1e3)
        itl.extend((b - a) * 1e3 for (a, _), (b, _) in zip(got, got[1:], strict=False))
        if (count := sum(n for _, n in got)) > 1:
            tpot.append((got[-1][0] - got[0][0]) * 1e3 / (count - 1))
    figures = measured(
        requests / wall_s,
        tokens / wall_s,
        tokens / wall_s / concurrency,
        ttft=distribution(ttft),
        tpot=distribution(tpot),
        itl=distribution(itl),
    )
    return {
        "concurrency": concurrency,
        "requests": requests,
        "output_tokens": tokens,
        **{k: round(v, 3) for k, v in figures.items() if v is not None},
    }


def perf_analyzer(venv: Path, grpc: str, prompt: str, concurrency: int, tokens: int) -> dict[str, Any]:
    """perf_analyzer --streaming at one concurrency, closed loop: 3 windows of 2 x c requests (at least 4), so
    6 waves in all; TTFT/TPOT/ITL from its profile export (per-response times)."""
    cudart = next(venv.glob("lib/python3*/site-packages/nvidia/cuda_runtime/lib"))
    work = Path(tempfile.mkdtemp(prefix="pa-"))
    (work / "input.json").write_text(
        json.dumps(
            {"data": [{"text_input": [prompt], "max_tokens": [tokens], "min_tokens": [tokens], "stream": [True]}]}
        )
    )
    argv = [
        str(venv / "bin" / "perf_analyzer"),
        "-m",
        "smollm2",
        "-i",
        "grpc",
        "-u",
        grpc,
        "--streaming",
        "--input-data",
        str(work / "input.json"),
        "--concurrency-range",
        f"{concurrency}:{concurrency}:1",
        "--measurement-mode",
        "count_windows",
        "--measurement-request-count",
        str(max(4, 2 * concurrency)),
        "--stability-percentage",
        "999",
        "--max-trials",
        "3",
        "--profile-export-file",
        str(work / "export.json"),
    ]
    subprocess.run(argv, check=True, capture_output=True, timeout=900, env={"LD_LIBRARY_PATH": str(cudart)})
    requests = json.loads((work / "export.json").read_text())["experiments"][0]["requests"]
    first = min(r["timestamp"] for r in requests)
    last = max(r["response_timestamps"][-1] for r in requests)
    streams = [
        (
            r["timestamp"] / 1e9,
            [
                (t / 1e9, _count(o.get("output_ids")))
                for t, o in zip(r["response_timestamps"], r["response_outputs"], strict=False)
            ],
        )
        for r in requests
    ]
    tokens = sum(n for _, arrivals in streams for _, n in arrivals)
    return client_metrics(concurrency, len(requests), tokens, (last - first) / 1e9, streams)


AIPERF = {"ttft": "time_to_first_token", "tpot": "inter_token_latency", "itl": "inter_chunk_latency"}
"""AIPerf's names for specdeploy's latencies: its `inter_token_latency` is (request latency - TTFT) / (output tokens
- 1) per request, which is TPOT; the gaps between chunks are its `inter_chunk_latency` (docs/design/metrics.md).
Its per-user throughput is the mean over requests of 1 / that ITL, not the output token throughput over c."""


def aiperf(venv: Path, openai_url: str, tokenizer: Path, concurrency: int, tokens: int, waves: int) -> dict[str, Any]:
    """AIPerf profile on the chat endpoint, streaming, synthetic prompts, fixed output length (ignore_eos):
    `waves` x c requests (at least 8) after c warm-up requests."""
    work = Path(tempfile.mkdtemp(prefix="aiperf-"))
    argv = [
        str(venv / "bin" / "aiperf"),
        "profile",
        "-m",
        "smollm2",
        "--url",
        openai_url.removesuffix("/v1"),
        "--endpoint-type",
        "chat",
        "--streaming",
        "--concurrency",
        str(concurrency),
        "--request-count",
        str(max(8, waves * concurrency)),
        "--warmup-request-count",
        str(concurrency),
        "--isl",
        "64",
        "--osl",
        str(tokens),
        "--extra-inputs",
        "ignore_eos:true",
        "--tokenizer",
        str(tokenizer),
        "--ui",
        "none",
        "--artifact-dir",
        str(work),
        "--random-seed",
        "1",
        "--no-server-metrics",
        "--use-server-token-count",
    ]
    subprocess.run(argv, check=True, capture_output=True, timeout=900, cwd=work)
    d = json.loads((work / "profile_export_aiperf.json").read_text())
    found = {name: (d.get(name) or {}).get("avg") for name in THROUGHPUTS}
    found |= {
        key(ours, stat): (d.get(theirs) or {}).get("avg" if stat == "mean" else stat)
        for ours, theirs in AIPERF.items()
        for stat in STATS
    }
    return {
        "concurrency": concurrency,
        "requests": int(d["request_count"]["avg"]),
        **{name: round(v, 3) for name, v in found.items() if v is not None},
    }


def _count(ids: Any) -> int:
    """Tokens in one response's output_ids (a one-element tensor comes back as a bare number)."""
    if ids is None:
        return 0
    return len(ids) if isinstance(ids, list) else 1
