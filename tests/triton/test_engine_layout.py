"""The engine layout loads in a real tritonserver 2.51 and answers text -> pre -> fake trtllm -> post -> text."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from specdeploy.api import load_and_resolve
from specdeploy.errors import UsageError
from specdeploy.render.actions import render_resolved
from specdeploy.serve.client import ask
from tests.triton.helpers import MEDUSA

DRAFT_TARGET = (
    MEDUSA.replace("mechanism: medusa", "mechanism: draft_target")
    .replace("draft_model: TARGET", "draft_model: DRAFT")
    .replace("  options: {num_heads: 3, choices: [[0], [0, 0], [1], [0, 0, 0]]}\n", "")
)
LOOKAHEAD = """
target: {model: TARGET}
hardware: {gpu: l40s}
runtime: {backend: tensorrt, trtllm_version: 1.2.1}
speculative: {mechanism: lookahead, options: {window_size: 3, ngram_size: 3, verification_set_size: 3}}
serving: {max_batch_size: 4}
"""


def _infer(client, model: str, text: str, extra: dict | None = None):  # type: ignore[no-untyped-def]
    import tritonclient.grpc as grpcclient

    arrays = {
        "text_input": np.array([[text.encode()]], dtype=object),
        "max_tokens": np.array([[8]], dtype=np.int32),
        **(extra or {}),
    }
    inputs = []
    for name, value in arrays.items():
        tensor = grpcclient.InferInput(
            name,
            list(value.shape),
            "BYTES" if value.dtype == object else {np.int32: "INT32", np.bool_: "BOOL"}[value.dtype.type],
        )
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
    result = _infer(
        server.client(), "tensorrt_llm_bls", "hello world", {"num_draft_tokens": np.array([[2]], dtype=np.int32)}
    )
    # the echoing test double "drafts" the context and "verifies" by echoing it: the loop still terminates
    assert result.as_numpy("text_output").reshape(-1)[0].decode().startswith("hello world")
    assert result.as_numpy("total_draft_tokens").reshape(-1)[0] > 0


def test_lookahead_parameters_satisfy_the_backend(write_profile, engine_inputs, tmp_path, server_factory):  # type: ignore[no-untyped-def]
    server = server_factory(_repo(write_profile, engine_inputs, tmp_path, LOOKAHEAD))
    server.load("tensorrt_llm")
    assert server.client().is_model_ready("tensorrt_llm", client_timeout=10)


def test_unfilled_placeholder_is_refused_by_the_backend_double(
    write_profile,
    engine_inputs,
    tmp_path,  # type: ignore[no-untyped-def]
    server_factory,
):
    from tritonclient.utils import InferenceServerException

    repo = _repo(write_profile, engine_inputs, tmp_path, LOOKAHEAD)
    config = repo / "tensorrt_llm" / "config.pbtxt"
    config.write_text(config.read_text().replace(engine_inputs.engine_dir, "${engine_dir}"))
    server = server_factory(repo)
    with pytest.raises(InferenceServerException) as err:
        server.load("tensorrt_llm")
    assert "gpt_model_path is unfilled" in str(err.value) + server.log()


def _infer_extra(client, model: str, text: str, extra: dict):  # type: ignore[no-untyped-def]
    import tritonclient.grpc as grpcclient

    arrays = {
        "text_input": np.array([[text.encode()]], dtype=object),
        "max_tokens": np.array([[8]], dtype=np.int32),
        **extra,
    }
    inputs = []
    for name, value in arrays.items():
        kind = (
            "BYTES"
            if value.dtype == object
            else {np.int32: "INT32", np.uint64: "UINT64", np.float32: "FP32"}[value.dtype.type]
        )
        tensor = grpcclient.InferInput(name, list(value.shape), kind)
        tensor.set_data_from_numpy(value)
        inputs.append(tensor)
    return client.infer(model, inputs, client_timeout=60)


SAMPLING = {
    "seed": np.array([[7]], dtype=np.uint64),
    "temperature": np.array([[0.5]], dtype=np.float32),
    "top_k": np.array([[4]], dtype=np.int32),
    "top_p": np.array([[0.9]], dtype=np.float32),
    "stop_words": np.array([[b"world"]], dtype=object),
}


def test_ensemble_and_bls_forward_seed_sampling_and_stop_words(
    write_profile,
    engine_inputs,
    tmp_path,  # type: ignore[no-untyped-def]
    server_factory,
):
    """The backend reads `seed` (utils.h:97); the BLS forwards every sampling input and the stop words it
    declares, and both cut the answer after the stop word (the backend double honours stop_words_list)."""
    server = server_factory(_repo(write_profile, engine_inputs, tmp_path, MEDUSA))
    for model in ("preprocessing", "tensorrt_llm", "postprocessing", "ensemble", "tensorrt_llm_bls"):
        server.load(model)
    client = server.client()
    for model in ("ensemble", "tensorrt_llm_bls"):
        result = _infer_extra(client, model, "hello world is fast", SAMPLING)
        assert result.as_numpy("text_output").reshape(-1)[0].decode() == "hello world", model
    carried = [line for line in server.log().splitlines() if "fake tensorrtllm: tensorrt_llm request inputs" in line]
    assert len(carried) == 2
    for line in carried:
        for name in ("seed", "temperature", "runtime_top_k", "runtime_top_p", "stop_words_list", "end_id"):
            assert f"'{name}'" in line, (name, line)


def test_draft_target_bls_stops_at_a_stop_word(write_profile, engine_inputs, tmp_path, server_factory):  # type: ignore[no-untyped-def]
    server = server_factory(_repo(write_profile, engine_inputs, tmp_path, DRAFT_TARGET))
    for model in ("preprocessing", "tensorrt_llm", "tensorrt_llm_draft", "postprocessing", "tensorrt_llm_bls"):
        server.load(model)
    result = _infer_extra(
        server.client(),
        "tensorrt_llm_bls",
        "hello world is fast",
        {"num_draft_tokens": np.array([[2]], dtype=np.int32), **SAMPLING},
    )
    assert result.as_numpy("text_output").reshape(-1)[0].decode() == "hello world"
    drafts = [line for line in server.log().splitlines() if "tensorrt_llm_draft request inputs" in line]
    assert drafts and all("'seed'" in line for line in drafts)


def test_backend_double_refuses_random_seed_and_unknown_parameters(
    write_profile,
    engine_inputs,
    tmp_path,  # type: ignore[no-untyped-def]
    server_factory,
):
    """A repository rendered before the rename (random_seed) or with a misspelled parameter: the real backend
    would drop them silently; its double refuses them at load, naming them."""
    from tritonclient.utils import InferenceServerException

    repo = _repo(write_profile, engine_inputs, tmp_path, LOOKAHEAD)
    config = repo / "tensorrt_llm" / "config.pbtxt"
    text = config.read_text()
    config.write_text(
        text.replace('name: "seed"', 'name: "random_seed"').replace(
            '"enable_kv_cache_reuse"', '"enable_kv_cache_reuse_typo"'
        )
    )
    server = server_factory(repo)
    with pytest.raises(InferenceServerException) as err:
        server.load("tensorrt_llm")
    assert "unknown parameter(s) ['enable_kv_cache_reuse_typo']" in str(err.value)
    config.write_text(text.replace('name: "seed"', 'name: "random_seed"'))
    with pytest.raises(InferenceServerException) as err:
        server.load("tensorrt_llm")
    assert "input(s) ['random_seed'] are never read by the backend" in str(err.value)


def test_streaming_engine_repository_answers_through_the_ensemble(
    write_profile,
    engine_inputs,
    tmp_path,  # type: ignore[no-untyped-def]
    server_factory,
):
    """serving.streaming: tensorrt_llm (and so the ensemble) is decoupled; a gRPC stream gets the answer."""
    import threading

    import tritonclient.grpc as grpcclient

    server = server_factory(
        _repo(
            write_profile,
            engine_inputs,
            tmp_path,
            MEDUSA.replace("max_seq_len: 2048}", "max_seq_len: 2048, streaming: true}"),
        )
    )
    for model in ("preprocessing", "tensorrt_llm", "postprocessing", "ensemble"):
        server.load(model)
    client, texts, done = server.client(), [], threading.Event()

    def on_response(result, error) -> None:  # type: ignore[no-untyped-def]
        texts.append(str(error) if error else result.as_numpy("text_output").reshape(-1)[0].decode())
        done.set()

    inputs = []
    for name, value in (
        ("text_input", np.array([[b"hello world"]], dtype=object)),
        ("max_tokens", np.array([[8]], dtype=np.int32)),
        ("stream", np.array([[True]])),
    ):
        tensor = grpcclient.InferInput(
            name, list(value.shape), {np.object_: "BYTES", np.int32: "INT32", np.bool_: "BOOL"}[value.dtype.type]
        )
        tensor.set_data_from_numpy(value)
        inputs.append(tensor)
    client.start_stream(callback=on_response)
    client.async_stream_infer("ensemble", inputs)
    assert done.wait(60)
    client.stop_stream()
    assert texts == ["hello world"]


def test_perf_metrics_request_gets_every_output_the_backend_writes(
    write_profile,
    engine_inputs,
    tmp_path,  # type: ignore[no-untyped-def]
    server_factory,
):
    """`return_perf_metrics` makes the C++ backend write ten outputs (the double does too); Triton core refuses any
    that the config does not declare, so on a GPU the request fails unless all ten are declared."""
    import tritonclient.grpc as grpcclient

    server = server_factory(_repo(write_profile, engine_inputs, tmp_path, MEDUSA))
    server.load("tensorrt_llm")
    arrays = {
        "input_ids": np.array([[5, 6, 7]], dtype=np.int32),
        "input_lengths": np.array([[3]], dtype=np.int32),
        "request_output_len": np.array([[4]], dtype=np.int32),
        "return_perf_metrics": np.array([[True]], dtype=np.bool_),
    }
    inputs = []
    for name, value in arrays.items():
        tensor = grpcclient.InferInput(name, list(value.shape), "BOOL" if value.dtype == np.bool_ else "INT32")
        tensor.set_data_from_numpy(value)
        inputs.append(tensor)
    result = server.client().infer("tensorrt_llm", inputs, client_timeout=60)
    assert result.as_numpy("output_ids").reshape(-1).tolist() == [5, 6, 7]
    for name in ("kv_cache_alloc_new_blocks", "arrival_time_ns", "last_token_time_ns", "total_draft_tokens"):
        assert result.as_numpy(name) is not None, name
