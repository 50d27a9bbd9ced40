"""The standard clients for bench/serving.py, run from their own virtualenv (bench/clients.sh makes it):
perf_analyzer (gRPC streaming: the model is decoupled) and AIPerf (the OpenAI chat endpoint, streaming).
Each returns per-concurrency output tokens/s, TTFT and ITL percentiles as the tool measured them."""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from specdeploy.engines.reference.runtime.stats import percentiles as _percentiles


def percentiles(values: list[float]) -> dict[str, float]:
    """The runtime's p50/p90/p99/mean, rounded to 0.01 ms for the result file."""
    return {k: round(v, 2) for k, v in _percentiles(values).items()}


def perf_analyzer(venv: Path, grpc: str, prompt: str, concurrency: int, tokens: int) -> dict[str, Any]:
    """perf_analyzer --streaming at one concurrency, closed loop: 3 windows of 2 x c requests (at least 4), so
    6 waves in all; TTFT/ITL from its profile export (per-response times)."""
    cudart = next(venv.glob("lib/python3*/site-packages/nvidia/cuda_runtime/lib"))
    work = Path(tempfile.mkdtemp(prefix="pa-"))
    (work / "input.json").write_text(json.dumps({"data": [{"text_input": [prompt], "max_tokens": [tokens],
                                                           "min_tokens": [tokens], "stream": [True]}]}))
    argv = [str(venv / "bin" / "perf_analyzer"), "-m", "smollm2", "-i", "grpc", "-u", grpc, "--streaming",
            "--input-data", str(work / "input.json"), "--concurrency-range", f"{concurrency}:{concurrency}:1",
            "--measurement-mode", "count_windows", "--measurement-request-count", str(max(4, 2 * concurrency)),
            "--stability-percentage", "999", "--max-trials", "3", "--profile-export-file", str(work / "export.json")]
    subprocess.run(argv, check=True, capture_output=True, timeout=900, env={"LD_LIBRARY_PATH": str(cudart)})
    requests = json.loads((work / "export.json").read_text())["experiments"][0]["requests"]
    ttft, itl, total = [], [], 0
    first = min(r["timestamp"] for r in requests)
    last = max(r["response_timestamps"][-1] for r in requests)
    for r in requests:
        times = r["response_timestamps"]
        counts = [_count(o.get("output_ids")) for o in r["response_outputs"]]
        total += sum(counts)
        ttft.append((times[0] - r["timestamp"]) / 1e6)
        for before, when, n in zip(times, times[1:], counts[1:], strict=False):
            itl.extend([(when - before) / 1e6 / n] * n if n else [])
    return {"concurrency": concurrency, "requests": len(requests), "output_tokens": total,
            "tokens_per_s": round(total / ((last - first) / 1e9), 2), "ttft_ms": percentiles(ttft),
            "itl_ms": percentiles(itl)}


def aiperf(venv: Path, openai_url: str, tokenizer: Path, concurrency: int, tokens: int, waves: int) -> dict[str, Any]:
    """AIPerf profile on the chat endpoint, streaming, synthetic prompts, fixed output length (ignore_eos):
    `waves` x c requests (at least 8) after c warm-up requests."""
    work = Path(tempfile.mkdtemp(prefix="aiperf-"))
    argv = [str(venv / "bin" / "aiperf"), "profile", "-m", "smollm2", "--url", openai_url.removesuffix("/v1"),
            "--endpoint-type", "chat", "--streaming", "--concurrency", str(concurrency),
            "--request-count", str(max(8, waves * concurrency)),
            "--warmup-request-count", str(concurrency), "--isl", "64", "--osl", str(tokens),
            "--extra-inputs", "ignore_eos:true", "--tokenizer", str(tokenizer), "--ui", "none",
            "--artifact-dir", str(work), "--random-seed", "1", "--no-server-metrics", "--use-server-token-count"]
    subprocess.run(argv, check=True, capture_output=True, timeout=900, cwd=work)
    d = json.loads((work / "profile_export_aiperf.json").read_text())
    keep = ("avg", "p50", "p90", "p99")
    return {"concurrency": concurrency, "requests": int(d["request_count"]["avg"]),
            "tokens_per_s": round(d["output_token_throughput"]["avg"], 2),
            "ttft_ms": {k: round(d["time_to_first_token"][k], 2) for k in keep},
            "itl_ms": {k: round(d["inter_token_latency"][k], 2) for k in keep}}


def _count(ids: Any) -> int:
    """Tokens in one response's output_ids (a one-element tensor comes back as a bare number)."""
    if ids is None:
        return 0
    return len(ids) if isinstance(ids, list) else 1
