"""A bounded load test of the served reference model (cpu-smollm2 on a real tritonserver, 127.0.0.1 only).

64 concurrent requests of mixed prompt lengths, 8 of them malformed (no prompt, a bad draft_len, bytes that are
not UTF-8, a prompt over serving.max_seq_len). Every good request must come back with exactly its sequential
answer (greedy decoding), every malformed one refused with an error naming what is wrong, and the server must still
answer afterwards.
Bounded: at most REQUESTS requests, each with a client timeout, the whole run with a deadline.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REQUESTS = 64
MAX_TOKENS = 8
DEADLINE_S = 900.0
PROMPTS = (
    "Hi!",
    "What is 2 + 2?",
    "Name three colours.",
    "Write a haiku about GPUs.",
    "Explain speculative decoding in one sentence, for a reader who knows what a language model is.",
    "List the planets of the solar system in order from the sun, with one fact about each of them." * 2,
    "Translate 'good morning' into French, Spanish and German.",
    "Why is the sky blue? " * 6,
)
MALFORMED = {
    "no prompt": "text_input",
    "draft_len 99": "draft_len",
    "not UTF-8": "utf-8",
    "over max_seq_len": "max_seq_len",
}
"""Each malformed kind -> what its error must name: over a gRPC stream Triton passes a model's error message on,
not its status code (the HTTP generate endpoint maps INVALID_ARG to 400: tests/triton/test_reference_serving.py)."""


def _request(url: str, kind: str, prompt: str = "") -> tuple[str, Any, float]:
    """(kind, output ids or the error's status, seconds)."""
    import numpy as np
    import tritonclient.grpc as grpcclient
    from tritonclient.utils import InferenceServerException

    from specdeploy.serve.client import streamed

    inputs = []

    def add(name: str, value: Any, dtype: str) -> None:
        tensor = grpcclient.InferInput(name, [1], dtype)
        tensor.set_data_from_numpy(value)
        inputs.append(tensor)

    text = {"not UTF-8": b"caf\xe9", "over max_seq_len": b"hello " * 1000}.get(kind, prompt.encode())
    if kind != "no prompt":
        add("text_input", np.array([text], dtype=object), "BYTES")
    add("max_tokens", np.array([MAX_TOKENS], dtype=np.int32), "INT32")
    if kind == "draft_len 99":
        add("draft_len", np.array([99], dtype=np.int32), "INT32")
    t0 = time.perf_counter()
    try:  # the reference model is decoupled: a request is answered over a gRPC stream (unary infer refuses it)
        result = streamed(grpcclient.InferenceServerClient(url), "smollm2", inputs, 300)
        return kind, result.as_numpy("output_ids").tolist(), time.perf_counter() - t0
    except InferenceServerException as exc:
        return kind, f"{exc.status()}: {exc.message()}", time.perf_counter() - t0


def run(requests: int = REQUESTS, folder: Path | None = None) -> dict[str, Any]:
    """Serve cpu-smollm2, answer every prompt sequentially, then `requests` at once; the checked figures."""
    from specdeploy.api import load_and_resolve
    from specdeploy.render.actions import render_resolved
    from specdeploy.render.backends import prepare_backends
    from specdeploy.render.model import RenderInputs
    from specdeploy.render.server import start_server
    from specdeploy.runtime_paths import cache_dir

    work = Path(folder or tempfile.mkdtemp(prefix="specdeploy-load-"))
    resolved = load_and_resolve("cpu-smollm2", ("speculative.draft_len=2", "serving.max_seq_len=512"))
    repo = render_resolved(resolved, work / "repo", inputs=RenderInputs()).out
    started = time.monotonic()
    with start_server(repo, prepare_backends(cache_dir()), work / "server.log") as server:
        server.load("smollm2", timeout=300)
        sequential = {p: _request(server.grpc_url, "good", p) for p in PROMPTS}
        plan = [
            ("good", PROMPTS[i % len(PROMPTS)]) if i % 8 else (list(MALFORMED)[(i // 8) % len(MALFORMED)], "Hi!")
            for i in range(requests)
        ]
        t0 = time.perf_counter()
        with ThreadPoolExecutor(max_workers=requests) as pool:
            done = list(pool.map(lambda job: _request(server.grpc_url, *job), plan))
        wall = time.perf_counter() - t0
        alive = server.client().is_server_live() and _request(server.grpc_url, "good", "Hi!")[1] == sequential["Hi!"][1]
    assert time.monotonic() - started < DEADLINE_S, "the load test ran past its deadline"
    good = [(job[1], out) for job, out in zip(plan, done, strict=True) if job[0] == "good"]
    bad = [out for job, out in zip(plan, done, strict=True) if job[0] != "good"]
    refused = sum(isinstance(out[1], str) and MALFORMED[out[0]] in out[1].lower() for out in bad)
    latencies = sorted(out[2] for out in done)
    return {
        "requests": requests,
        "malformed": len(bad),
        "max_tokens": MAX_TOKENS,
        "instances": resolved.profile.triton.instances,
        "identical_to_sequential": sum(out[1] == sequential[prompt][1] for prompt, out in good),
        "good": len(good),
        "refused_with_reason": refused,
        "server_alive_after": alive,
        "wall_s": round(wall, 2),
        "sequential_s": round(sum(s[2] for s in sequential.values()), 2),
        "latency_s": {
            "p50": round(statistics.median(latencies), 3),
            "p90": round(latencies[int(0.9 * (len(latencies) - 1))], 3),
            "p99": round(latencies[int(0.99 * (len(latencies) - 1))], 3),
            "max": round(latencies[-1], 3),
        },
    }


def main() -> None:
    from _common import write_result

    os.environ.setdefault("NO_COLOR", "1")
    result = run()
    path = write_result(
        "load",
        {
            "profile": "cpu-smollm2",
            "sets": ["speculative.draft_len=2", "serving.max_seq_len=512"],
            **result,
            "note": "one model instance on a 2-core CPU, batching requests in flight up to "
            "serving.max_batch_size; the rest wait for a free row, so latency grows "
            "with queue position",
        },
    )
    print(path.read_text())


if __name__ == "__main__":
    main()
