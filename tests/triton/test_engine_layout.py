"""The engine layout loads in a real tritonserver 2.51 and answers text -> pre -> fake trtllm -> post -> text."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from specdeploy.api import load_and_resolve
from specdeploy.errors import UsageError
from specdeploy.render.actions import render_resolved
from specdeploy.serve.client import ask

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
DRAFT_TARGET = MEDUSA.replace("mechanism: medusa", "mechanism: draft_target").replace(
    "draft_model: TARGET", "draft_model: DRAFT").replace(
    "  options: {num_heads: 3, choices: [[0], [0, 0], [1], [0, 0, 0]]}\n", "")
LOOKAHEAD = """
target: {model: TARGET}
hardware: {gpu: l40s}
runtime: {backend: tensorrt, trtllm_version: 1.2.1}
speculative: {mechanism: lookahead, options: {window_size: 3, ngram_size: 3, verification_set_size: 3}}
serving: {max_batch_size: 4}
"""


def _infer(client, model: str, text: str, extra: dict | None = None):  # type: ignore[no-untyped-def]
    import tritonclient.grpc as grpcclient

    arrays = {"text_input": np.array([[text.encode()]], dtype=object),
              "max_tokens": np.array([[8]], dtype=np.int32), **(extra or {})}
    inputs = []
    for name, value in arrays.items():
        tensor = grpcclient.InferInput(name, list(value.shape), "BYTES" if value.dtype == object else
                                       {np.int32: "INT32", np.bool_: "BOOL"}[value.dtype.type])
        tensor.set_data_from_numpy(value)
        inputs.append(tensor)
    return client.infer(model, inputs, client_timeout=60)


def _repo(write_profile, engine_inputs, tmp_path: Path, body: str) -> Path:  # type: ignore[no-untyped-def]
    resolved = load_and_resolve(str(write_profile(body)))
    return render_resolved(resolved, tmp_path / "repo", inputs=engine_inputs).out


def test_medusa_ensemble_answers_text(write_profile, engine_inputs, tmp_path, server_factory):  # type: ignore[no-untyped-def]
    server = server_factory(_repo(write_profile, engine_inputs, tmp_path, MEDUSA))
    for model in ("preprocessing", "tensorrt_llm", "postprocessing", "ensemble", "tensorrt_llm_bls"):
        server.load(model)
    client = server.client()
    result = _infer(client, "ensemble", "hello speculative world")
    assert result.as_numpy("text_output").reshape(-1)[0].decode() == "hello speculative world"
    bls = _infer(client, "tensorrt_llm_bls", "decoding is fast")
    assert bls.as_numpy("text_output").reshape(-1)[0].decode() == "decoding is fast"
    # The engine's draft length is compiled in: a per-request one is refused before anything is sent.
    with pytest.raises(UsageError, match="takes no per-request draft length"):
        ask(server.grpc_url, "ensemble", "hi", draft_len=2)


def test_draft_target_bls_runs_the_draft_loop(write_profile, engine_inputs, tmp_path, server_factory):  # type: ignore[no-untyped-def]
    server = server_factory(_repo(write_profile, engine_inputs, tmp_path, DRAFT_TARGET))
    for model in ("preprocessing", "tensorrt_llm", "tensorrt_llm_draft", "postprocessing", "tensorrt_llm_bls"):
        server.load(model)
    result = _infer(server.client(), "tensorrt_llm_bls", "hello world",
                    {"num_draft_tokens": np.array([[2]], dtype=np.int32)})
    # the echoing test double "drafts" the context and "verifies" by echoing it: the loop still terminates
    assert result.as_numpy("text_output").reshape(-1)[0].decode().startswith("hello world")
    assert result.as_numpy("total_draft_tokens").reshape(-1)[0] > 0


def test_lookahead_parameters_satisfy_the_backend(write_profile, engine_inputs, tmp_path, server_factory):  # type: ignore[no-untyped-def]
    server = server_factory(_repo(write_profile, engine_inputs, tmp_path, LOOKAHEAD))
    server.load("tensorrt_llm")
    assert server.client().is_model_ready("tensorrt_llm", client_timeout=10)


def test_unfilled_placeholder_is_refused_by_the_backend_double(write_profile, engine_inputs, tmp_path,  # type: ignore[no-untyped-def]
                                                               server_factory):
    from tritonclient.utils import InferenceServerException

    repo = _repo(write_profile, engine_inputs, tmp_path, LOOKAHEAD)
    config = repo / "tensorrt_llm" / "config.pbtxt"
    config.write_text(config.read_text().replace(engine_inputs.engine_dir, "${engine_dir}"))
    server = server_factory(repo)
    with pytest.raises(InferenceServerException) as err:
        server.load("tensorrt_llm")
    assert "gpt_model_path is unfilled" in str(err.value) + server.log()
