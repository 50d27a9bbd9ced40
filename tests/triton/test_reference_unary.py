"""The reference model rendered NOT decoupled (serving.streaming false) on a real tritonserver with SmolLM2:
unary gRPC ModelInfer and HTTP /generate answer, concurrent unary requests still decode together in flight
(each answer equal to its sequential one), `stream` is refused with INVALID_ARGUMENT, and the OpenAI endpoint
answers without `stream`, refuses it in OpenAI's shape, cancels the request of a client that leaves (before:
it decoded on to max_tokens) and keeps Triton's status, INVALID_ARGUMENT a 400 and the model gone a 502 (before: any
Triton error was a 400). Before, the reference model was always decoupled: unary ModelInfer (perf_analyzer
without --streaming, tritonclient `infer`) was refused.

The same server also serves cpu-smollm2 as shipped (decoupled) as `smollm2`, for GenAI-Perf 0.0.16's kserve
inputs, transcribed from triton-inference-server/perf_analyzer @ f5203fa8 (identical to the genai-perf 0.0.16
wheel), genai-perf/genai_perf/:
- inputs/converters/tensorrtllm_converter.py (`--backend tensorrtllm`): text_input [text], max_tokens [256]
  (input_constants.py DEFAULT_TENSORRTLLM_MAX_TOKENS) or [N] with --output-tokens-mean N,
  exclude_input_in_output [True], min_length [N] with --output-tokens-mean-deterministic, stream [True] with
  --streaming; perf_analyzer is given `--shape max_tokens:1 --shape text_input:1`.
- inputs/converters/vllm_converter.py (`--backend vllm`): text_input [text], exclude_input_in_output [True],
  sampling_parameters [JSON string, values as strings: {"max_tokens":"N","min_tokens":"N"}], stream [True]
  with --streaming.
- config/generate/perf_analyzer_config.py `_add_protocol_args`: service kind triton (kserve) always runs
  perf_analyzer `-i grpc --streaming`, so every request goes over a gRPC stream, one tensor of shape [1] per
  key, typed by the model's config (the payload's `model` key names no input and is not sent).
"""

from __future__ import annotations

import json
import sysconfig
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from specdeploy.api import load_and_resolve
from specdeploy.render.actions import render_resolved
from specdeploy.render.model import RenderInputs
from tests.triton.helpers import LONG, leave
from tests.triton.reference_client import http_generate, stream, unary

PROMPTS = ["What is 2 + 2?", "Name three colors.", "Write a haiku about GPUs.", "Why is the sky blue?"]
SETS = ("speculative.draft_len=2", "serving.max_batch_size=4", "tune.output_len=16")
N = 8  # GenAI-Perf --output-tokens-mean 8 --output-tokens-mean-deterministic
GENAI = {
    "tensorrtllm": {"text_input": PROMPTS[3], "max_tokens": N, "exclude_input_in_output": True, "min_length": N},
    "vllm": {
        "text_input": PROMPTS[3],
        "exclude_input_in_output": True,
        "sampling_parameters": json.dumps({"max_tokens": str(N), "min_tokens": str(N)}, separators=(",", ":")),
    },
}


@pytest.fixture(scope="module")
def served(backends: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One tritonserver: `unary` (serving.streaming false) and `smollm2` (cpu-smollm2 as shipped: decoupled)."""
    pytest.importorskip("torch")
    from specdeploy.render.server import start_server

    tmp = tmp_path_factory.mktemp("unary")
    inputs = RenderInputs(site_packages=sysconfig.get_paths()["purelib"])
    repos = [
        render_resolved(load_and_resolve("cpu-smollm2", SETS + extra), tmp / name, inputs=inputs).out
        for name, extra in (("unary", ("serving.streaming=false", "triton.model_name=unary")), ("streamed", ()))
    ]
    server = start_server(
        repos[0],
        backends,
        tmp / "server.log",
        extra_args=("--disable-auto-complete-config", f"--model-repository={repos[1]}"),
    )
    try:
        for model in ("unary", "smollm2"):
            server.load(model, timeout=300)
        yield server
    finally:
        server.stop()


def test_unary_grpc_and_http_generate_answer(served: Any) -> None:
    from tritonclient.utils import InferenceServerException

    from specdeploy.serve.client import ask

    url, http = served.grpc_url, f"127.0.0.1:{served.http_port}"
    request = {"text_input": PROMPTS[0], "max_tokens": 6}
    one = unary(url, "unary", request)
    assert len(one["output_ids"]) == 6 and one["finish_reason"] == "length" and one["text_output"]
    assert http_generate(http, "unary", request)["text_output"] == one["text_output"]
    assert stream(url, "unary", request)[0][1]["output_ids"] == one["output_ids"]
    assert ask(url, "unary", PROMPTS[0], max_tokens=6).outputs["text_output"] == one["text_output"]  # `specdeploy ask`
    assert http_generate(http, "smollm2", request)["text_output"] == one["text_output"]  # /generate: either mode
    infer = {
        "inputs": [
            {"name": "text_input", "shape": [1], "datatype": "BYTES", "data": [PROMPTS[0]]},
            {"name": "max_tokens", "shape": [1], "datatype": "INT32", "data": [6]},
        ]
    }
    status, answer = _post(f"http://{http}/v2/models/unary/infer", infer)  # what perf_analyzer -i http sends
    assert status == 200 and answer["outputs"][0]["data"] == [one["text_output"]]
    # why the mode matters: a decoupled model refuses unary ModelInfer and HTTP /infer
    with pytest.raises(InferenceServerException, match="ModelInfer RPC doesn't support models with decoupled"):
        unary(url, "smollm2", request)
    status, refused = _post(f"http://{http}/v2/models/smollm2/infer", infer)
    assert status == 501 and "doesn't support models with decoupled" in refused["error"], refused


def test_concurrent_unary_requests_batch_in_flight_and_match_sequential(served: Any) -> None:
    url = served.grpc_url
    sequential = [unary(url, "unary", {"text_input": p}) for p in PROMPTS]
    assert all(a["batch_size"] == 1 for a in sequential)
    with ThreadPoolExecutor(len(PROMPTS)) as pool:
        together = list(pool.map(lambda p: unary(url, "unary", {"text_input": p}), PROMPTS))
    for alone, batched in zip(sequential, together, strict=True):
        assert batched["output_ids"] == alone["output_ids"] and batched["text_output"] == alone["text_output"]
    assert max(a["batch_size"] for a in together) > 1  # decoded together, each answered once when done


def test_stream_is_refused_with_invalid_argument(served: Any) -> None:
    from tritonclient.utils import InferenceServerException

    with pytest.raises(InferenceServerException) as refused:
        unary(served.grpc_url, "unary", {"text_input": PROMPTS[0], "stream": True})
    assert "INVALID_ARGUMENT" in str(refused.value.status()) and "serving.streaming: true" in refused.value.message()
    http = http_generate(f"127.0.0.1:{served.http_port}", "unary", {"text_input": PROMPTS[0], "stream": True})
    assert http["status"] == 400 and "serving.streaming: true" in http["error"]


def test_openai_endpoint_in_front_of_a_model_that_is_not_decoupled(served: Any) -> None:
    from specdeploy.serve.local import start_frontend

    frontend = start_frontend(served, "unary", 0)
    try:
        chat = {"model": "unary", "max_tokens": 6, "messages": [{"role": "user", "content": PROMPTS[0]}]}
        status, answer = _post(f"{frontend.url}/chat/completions", chat)
        assert status == 200 and answer["choices"][0]["message"]["content"]
        assert answer["usage"]["completion_tokens"] == 6
        status, refused = _post(f"{frontend.url}/chat/completions", {**chat, "stream": True})
        assert status == 400 and refused["error"]["param"] == "stream"
        assert "serving.streaming: true" in refused["error"]["message"]
        leave(frontend.url, "completions", {**LONG, "prompt": PROMPTS[2]})  # its client left: cancelled
        time.sleep(1.5)  # more than the model's cancel check interval (0.25 s) and a step
        assert unary(served.grpc_url, "unary", {"text_input": PROMPTS[0], "max_tokens": 4})["batch_size"] == 1
        # Triton's status is kept (unary ModelInfer): the model's INVALID_ARGUMENT is a 400, a model gone a 502
        status, refused = _post(f"{frontend.url}/completions", {"prompt": PROMPTS[0], "max_tokens": 0})
        assert status == 400 and refused["error"]["message"] == "max_tokens must be at least 1, got 0", refused
        served.client().unload_model("unary")
        try:
            while served.client().is_model_ready("unary"):
                time.sleep(0.1)
            status, failed = _post(f"{frontend.url}/completions", {"prompt": PROMPTS[0], "max_tokens": 4})
        finally:
            served.load("unary", timeout=300)
        assert status == 502 and failed["error"]["type"] == "server_error", failed
        assert "has no available versions" in failed["error"]["message"], failed  # Triton's message kept
    finally:
        frontend.stop()


@pytest.mark.parametrize("backend", sorted(GENAI))
def test_genai_perf_kserve_inputs(served: Any, backend: str) -> None:
    """GenAI-Perf's requests (over a gRPC stream, as its perf_analyzer runs) to both models; with --streaming
    (`stream` [True]) to the decoupled one, whose per-step responses add up to the same answer."""
    url = served.grpc_url
    answers = [stream(url, model, GENAI[backend]) for model in ("unary", "smollm2")]
    assert all(len(a) == 1 for a in answers)
    one = answers[0][0][1]
    assert len(one["output_ids"]) == N and one["finish_reason"] == "length"
    assert answers[1][0][1]["output_ids"] == one["output_ids"] and not one["text_output"].startswith(PROMPTS[3])
    assert unary(url, "unary", GENAI[backend])["output_ids"] == one["output_ids"]  # perf_analyzer without GenAI-Perf
    steps = stream(url, "smollm2", {**GENAI[backend], "stream": True})
    assert len(steps) > 1 and sum((s["output_ids"] for _, s in steps), []) == one["output_ids"]
    assert "".join(s["text_output"] for _, s in steps) == one["text_output"]


def _post(url: str, body: dict[str, Any]) -> tuple[int, Any]:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=300) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())
