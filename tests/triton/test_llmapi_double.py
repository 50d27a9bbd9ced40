"""Every shipped llmapi profile's repository loads in the real tritonserver with the `tensorrt_llm` TEST DOUBLE
(tests/fixtures/fake_trtllm), which validates LLM()'s arguments with the contract table of the profile's
release and batches the requests in flight: 16 concurrent requests each get their own answer, with at least 8
in flight at once in the LLM. One server per release (the double plays the release the server "installed"),
started on the backend folder that holds the double (conftest.py `backends_with_trtllm_double`)."""

from __future__ import annotations

import json
import shutil
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from specdeploy.api import load_and_resolve
from specdeploy.errors import UsageError
from specdeploy.profile.shipped import shipped_profiles
from specdeploy.render.actions import render_resolved
from specdeploy.render.check import check_repo
from specdeploy.render.context import layout_of
from tests.triton.helpers import double_answer

VARIANTS = {  # folder suffix -> (shipped profile, --set): what the shipped profiles do not cover
    "streaming": ("h200-eagle3", ("serving.streaming=true",)),  # decoupled: streaming through the double
    "x2": ("h200-eagle3", ("hardware.count=2", "triton.instances=2")),  # two instances, a GPU group each
    "scheduled": ("h200-eagle3", ("speculative.schedule={1: 8, 4: 4, 8: 2}",)),  # a tuned per-concurrency K
}
MAX_TOKENS = 24


def _layout(name: str) -> str | None:
    try:
        return layout_of(load_and_resolve(name))
    except UsageError:  # an engine without a Triton layout (vLLM serves itself)
        return None


def _llmapi_profiles() -> list[tuple[str, str, tuple[str, ...]]]:
    """(model folder, profile, sets) for every shipped llmapi profile and every variant."""
    shipped = [name for name in sorted(shipped_profiles()) if _layout(name) == "llmapi"]
    return [(name.replace("-", "_"), name, ()) for name in shipped] + [
        (f"{name}_{suffix}".replace("-", "_"), name, sets) for suffix, (name, sets) in VARIANTS.items()
    ]


@pytest.fixture(scope="module")
def served(backends_with_trtllm_double: Path, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """{model folder: (server, decoupled)}: every llmapi repository rendered, checked and loaded."""
    from specdeploy.render.server import start_server

    root = tmp_path_factory.mktemp("llmapi")
    releases: dict[str, list[tuple[str, bool]]] = {}
    for folder, name, sets in _llmapi_profiles():
        resolved = load_and_resolve(name, (*sets, f"triton.model_name={folder}"))
        single = render_resolved(resolved, root / "single" / folder).out
        assert check_repo(single) == [], name
        repo = root / resolved.profile.runtime.trtllm_version
        repo.mkdir(exist_ok=True)
        shutil.copytree(single / folder, repo / folder)
        releases.setdefault(resolved.profile.runtime.trtllm_version, []).append((folder, folder.endswith("_streaming")))
    models, servers = {}, []
    try:
        for release, folders in releases.items():
            env = {"FAKE_TRTLLM_VERSION": release, "FAKE_TRTLLM_RECORD": str(root / "record")}
            server = start_server(
                root / release,
                backends_with_trtllm_double,
                root / f"server-{release}.log",
                extra_args=("--disable-auto-complete-config",),
                env=env,
            )
            servers.append(server)
            for folder, decoupled in folders:
                server.load(folder)
                models[folder] = (server, decoupled)
        yield models, root / "record"
    finally:  # also when a load fails: a server left running would hold the shared stub busy
        for server in servers:
            server.stop()


def _inputs(prompt: str, max_tokens: int = MAX_TOKENS, streaming: bool = False):  # type: ignore[no-untyped-def]
    import tritonclient.grpc as grpcclient

    arrays = {
        "text_input": (np.array([prompt.encode()], dtype=object), "BYTES"),
        "sampling_param_max_tokens": (np.array([max_tokens], dtype=np.int32), "INT32"),
        "streaming": (np.array([streaming]), "BOOL"),
    }
    tensors = []
    for name, (value, dtype) in arrays.items():
        tensor = grpcclient.InferInput(name, list(value.shape), dtype)
        tensor.set_data_from_numpy(value)
        tensors.append(tensor)
    return tensors


def _ask(server, model: str, prompt: str) -> str:  # type: ignore[no-untyped-def]
    result = server.client().infer(model, _inputs(prompt), client_timeout=60)
    return str(result.as_numpy("text_output")[0].decode())


def _ask_streaming(server, model: str, prompt: str) -> str:  # type: ignore[no-untyped-def]
    """gRPC stream: the deltas, joined, until the final response."""
    client, parts, done = server.client(), [], threading.Event()

    def on_response(result, error) -> None:  # type: ignore[no-untyped-def]
        if error is not None:
            parts.append(f"<error {error}>")
            done.set()
            return
        parts.append(result.as_numpy("text_output")[0].decode())
        if (
            result.get_response().parameters.get("triton_final_response", None)
            and result.get_response().parameters["triton_final_response"].bool_param
        ):
            done.set()

    client.start_stream(callback=on_response)
    client.async_stream_infer(model, _inputs(prompt, streaming=True), enable_empty_final_response=True)
    assert done.wait(60), f"no final response for {prompt!r}"
    client.stop_stream()
    return "".join(parts)


def test_every_llmapi_repository_batches_concurrent_requests(served) -> None:  # type: ignore[no-untyped-def]
    models, record = served
    assert len(models) >= 8
    for model, (server, decoupled) in models.items():
        if model.endswith("_x2"):
            continue  # two LLMs share its requests: test_each_instance_gets_its_own_gpus
        prompts = [f"{model} request number {i} please" for i in range(16)]
        ask = _ask_streaming if decoupled else _ask
        with ThreadPoolExecutor(16) as pool:
            answers = list(pool.map(lambda p: ask(server, model, p), prompts))  # noqa: B023 - consumed here
        assert answers == [double_answer(p, MAX_TOKENS) for p in prompts], model
        stats = json.loads((record / f"{model}.json").read_text())
        assert stats["max_in_flight"] >= 8, (model, stats)
        assert stats["finished"] >= 16
    scheduled = json.loads((record / "h200_eagle3_scheduled.json").read_text())["k_at_batch"]
    assert scheduled[str(max(int(b) for b in scheduled))] == 2  # >= 8 in flight: the schedule's K, not 8


def test_a_cancelled_request_is_aborted_in_the_llm(served) -> None:  # type: ignore[no-untyped-def]
    models, record = served
    model = next(m for m, (_, decoupled) in models.items() if not decoupled)
    server = models[model][0]
    path = record / f"{model}.json"
    before = json.loads(path.read_text())["aborted"] if path.is_file() else 0
    call = server.client().async_infer(
        model, _inputs("a very long answer", max_tokens=100000), callback=lambda *_: None, client_timeout=60
    )
    time.sleep(1.0)
    call.cancel()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if path.is_file() and json.loads(path.read_text())["aborted"] > before:
            return
        time.sleep(0.1)
    pytest.fail(f"{model}: the cancelled request was not aborted in the LLM ({server.log()[-2000:]})")


def test_each_instance_gets_its_own_gpus(served) -> None:  # type: ignore[no-untyped-def]
    """triton.instances 2 on 2 GPUs: gpu_device_ids "0;1", instance i sees only group i (CUDA_VISIBLE_DEVICES)."""
    _, record = served
    seen = {json.loads(p.read_text())["cuda_visible_devices"] for p in record.glob("h200_eagle3_x2*.json")}
    assert seen == {"0", "1"}


def test_a_bad_request_gets_an_error_and_the_model_stays_up(served) -> None:  # type: ignore[no-untyped-def]
    from tritonclient.utils import InferenceServerException

    models, _ = served
    model = next(m for m, (_, decoupled) in models.items() if not decoupled and not m.endswith("_x2"))
    server = models[model][0]
    with pytest.raises(InferenceServerException, match="streaming needs decoupled: true"):
        server.client().infer(model, _inputs("stream me", streaming=True), client_timeout=30)
    assert _ask(server, model, "still here") == double_answer("still here", MAX_TOKENS)
