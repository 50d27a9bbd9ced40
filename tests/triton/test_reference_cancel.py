"""A request its gRPC client cancels leaves the in-flight batch (python_backend's `response_sender.is_cancelled()`;
Triton's docs name gRPC clients and the C API: server docs/user_guide/request_cancellation.md @ 0362057; an HTTP
/generate_stream connection that closes cancels too, /generate does not: docs/serving.md, Cancellation). Checked on a
real tritonserver with SmolLM2: a request decoding beside a cancelled one decodes alone. Before: a cancelled request
decoded on to max_tokens, holding its batch slot."""

from __future__ import annotations

import queue
import sysconfig
import time
from pathlib import Path
from typing import Any

import pytest

from specdeploy.api import load_and_resolve
from specdeploy.render.actions import render_resolved
from specdeploy.render.model import RenderInputs
from tests.triton.reference_client import answer, grpc_inputs

PROMPT = "Tell me a long story about a lighthouse."


def test_a_cancelled_request_leaves_the_batch(backends: Path, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    import tritonclient.grpc as grpcclient

    from specdeploy.render.server import start_server

    repo = render_resolved(
        load_and_resolve("cpu-smollm2", ("serving.max_batch_size=4",)),
        tmp_path / "repo",
        inputs=RenderInputs(site_packages=sysconfig.get_paths()["purelib"]),
    ).out
    server = start_server(repo, backends, tmp_path / "server.log", extra_args=("--disable-auto-complete-config",))
    try:
        server.load("smollm2", timeout=300)
        client = grpcclient.InferenceServerClient(server.grpc_url)
        got: queue.Queue[Any] = queue.Queue()
        client.start_stream(callback=lambda result, error: got.put(error or result))
        client.async_stream_infer("smollm2", grpc_inputs({"text_input": PROMPT, "max_tokens": 300, "stream": True}))
        got.get(timeout=120)  # its first step came back: it is decoding
        client.stop_stream(cancel_requests=True)
        time.sleep(1.0)  # more than the model's cancel check interval (0.25 s) and a step
        alone = answer(server.grpc_url, "smollm2", {"text_input": PROMPT, "max_tokens": 4})
        again = answer(server.grpc_url, "smollm2", {"text_input": PROMPT, "max_tokens": 4})
    finally:
        server.stop()
    assert alone["batch_size"] == 1, "the cancelled request was still decoding beside it"
    assert alone["output_ids"] == again["output_ids"]  # the model kept serving, exactly
