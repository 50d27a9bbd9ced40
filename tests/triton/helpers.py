"""What several modules of the tritonserver tier share: `specdeploy serve` started and stopped as a user does, a
tiny python-model repository, the profiles and the answers of the doubles (no test module imports another)."""

from __future__ import annotations

import http.client
import json
import os
import py_compile
import signal
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path
from typing import Any

import pytest

SETS = ("speculative.draft_len=2",)
"""What `serve_smollm2` renders cpu-smollm2 with (and what a local `generate` compares against)."""
ENV = {**os.environ, "NO_COLOR": "1"}

MEDUSA = """
target: {model: TARGET}
hardware: {gpu: l40s}
runtime: {backend: tensorrt, trtllm_version: 1.2.1}
speculative:
  mechanism: medusa
  draft_model: TARGET
  draft_len: 4
  options: {num_heads: 3, choices: [[0], [0, 0], [1], [0, 0, 0]]}
serving: {max_batch_size: 4, max_seq_len: 2048}
triton: {layout: engine}
"""
"""An engine-layout profile (conftest.py `write_profile` fills TARGET/DRAFT)."""
LLMAPI = """
target: {model: TARGET}
hardware: {gpu: h200}
runtime: {backend: pytorch, trtllm_version: 1.2.1}
speculative: {mechanism: eagle3, draft_len: 3, draft_model: yuhuili/EAGLE3-LLaMA3.1-Instruct-8B}
"""
"""An llmapi-layout profile."""

ECHO_CONFIG = """name: "{name}"
backend: "python"
max_batch_size: 0
input [{{ name: "IN" data_type: TYPE_INT32 dims: [ 1 ] }}]
output [{{ name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] }}]
instance_group [{{ kind: KIND_CPU count: 1 }}]
"""
MODEL = """import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor("OUT", pb_utils.get_input_tensor_by_name(
            r, "IN").as_numpy() + {add})]) for r in requests]
"""
"""The echo model's model.py (`.format(add=...)`): answers IN + add."""

LONG = {"max_tokens": 1000, "ignore_eos": True}  # 1000 tokens, tens of seconds on the CPU: still going when checked


def _as_a_terminal_would() -> None:
    """A background job (`cmd &` in a script, as CI may run us) inherits SIGINT ignored; a terminal's Ctrl-C
    reaches a foreground process with the default disposition, which is what these tests emulate."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def serve_smollm2(artifact: Path) -> tuple[subprocess.Popen[bytes], Path, int]:
    """Render cpu-smollm2, start `specdeploy serve` on it, wait until every model is loaded: (process, state, pid
    of tritonserver)."""
    from specdeploy.api import load_and_resolve
    from specdeploy.render.actions import render_resolved
    from specdeploy.render.model import RenderInputs

    render_resolved(load_and_resolve("cpu-smollm2", SETS), artifact / "triton", inputs=RenderInputs())
    server = subprocess.Popen(
        [sys.executable, "-m", "specdeploy", "serve", str(artifact), "--openai-port", "0"],
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=_as_a_terminal_would,
    )
    state = artifact / ".specdeploy" / "serve.json"
    return server, state, int(wait_served(server, artifact)["pid"])


def wait_served(server: subprocess.Popen[bytes], artifact: Path) -> dict[str, object]:
    """The endpoint `serve` records once every model is loaded (the test fails if it dies or takes 300 s)."""
    state = artifact / ".specdeploy" / "serve.json"
    deadline = time.monotonic() + 300
    while not state.exists():
        if server.poll() is not None or time.monotonic() > deadline:
            server.kill()
            pytest.fail(f"serve did not come up: {server.communicate()[0].decode()[-2000:]}")
        time.sleep(0.3)
    return dict(json.loads(state.read_text()))


def serve_gated(folder: Path, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], dict[str, object] | None]:
    """`specdeploy serve --no-openai` on `folder`: (process, its endpoint record), or (process, None) once it exited
    (its gate refused the folder)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "specdeploy", "serve", str(folder), "--no-openai"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    state = folder / ".specdeploy" / "serve.json"
    deadline = time.monotonic() + 300
    while not state.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.3)
    return process, json.loads(state.read_text()) if state.exists() else None


def stop(process: subprocess.Popen[bytes]) -> str:
    """Ctrl-C a `serve` still running; its output."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGINT)
    return process.communicate(timeout=60)[0].decode()


def echo_repo(folder: Path, add: int, *, planted: bool = False) -> Path:
    """A repository `serve` accepts: a manifest naming one python model `echo` (adds `add`); `planted` adds a model
    folder the manifest does not name."""
    names = ["echo", "planted"] if planted else ["echo"]
    for name in names:
        (folder / name / "1").mkdir(parents=True)
        (folder / name / "config.pbtxt").write_text(ECHO_CONFIG.format(name=name))
        (folder / name / "1" / "model.py").write_text(MODEL.format(add=add))
    (folder / "specdeploy-repo.json").write_text(json.dumps({"layout": "test", "models": ["echo"]}))
    return folder


def infer(url: str, value: int) -> int:
    """The echo model's answer to `value` over gRPC."""
    import numpy as np
    import tritonclient.grpc as grpcclient

    client = grpcclient.InferenceServerClient(url)
    tensor = grpcclient.InferInput("IN", [1], "INT32")
    tensor.set_data_from_numpy(np.array([value], dtype=np.int32))
    return int(client.infer("echo", [tensor]).as_numpy("OUT")[0])


def planted_bytecode(model: Path) -> None:
    """A .pyc of other code whose header carries model.py's mtime and size: Python runs it instead of model.py."""
    evil = model.with_name("evil.py")
    evil.write_text(MODEL.format(add=1000))
    pyc = model.parent / "__pycache__" / f"model.{sys.implementation.cache_tag}.pyc"
    pyc.parent.mkdir()
    py_compile.compile(str(evil), cfile=str(pyc))
    evil.unlink()
    source = model.stat()
    data = bytearray(pyc.read_bytes())
    data[8:16] = int(source.st_mtime).to_bytes(4, "little") + (source.st_size & 0xFFFFFFFF).to_bytes(4, "little")
    pyc.write_bytes(bytes(data))


def double_answer(prompt: str, count: int) -> str:
    """What the `tensorrt_llm` double answers (tests/fixtures/fake_trtllm/README.md), derived independently here:
    the prompt's words reversed, repeated to `count` words."""
    words = prompt.split()[::-1]
    return " ".join(words[i % len(words)] for i in range(count))


def leave(base: str, path: str, body: dict[str, Any]) -> None:
    """Send an OpenAI request and disconnect: after the first SSE event when streamed, else after 3 s of decoding."""
    url = urllib.parse.urlsplit(base)
    connection = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=300)
    connection.request("POST", f"{url.path}/{path}", json.dumps(body), {"Content-Type": "application/json"})
    if body.get("stream"):
        response = connection.getresponse()
        assert response.status == 200
        while not response.readline().startswith(b"data:"):
            pass
    else:
        time.sleep(3.0)
    connection.close()
