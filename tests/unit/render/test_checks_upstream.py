"""check-repo knows what upstream needs beyond Triton's own load: each rule on a hand-broken repository, with
file, line and key (a repository rendered by an older specdeploy had every one of these)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specdeploy.render.actions import render_resolved
from specdeploy.render.check import check_repo
from specdeploy.render.model import RenderInputs
from tests.helpers import needs_triton_schema

pytestmark = needs_triton_schema

PROFILE = """
target: {model: TARGET}
hardware: {gpu: l40s, count: 2}
runtime: {backend: BACKEND, trtllm_version: 1.2.1}
speculative: {mechanism: draft_target, draft_len: 4, draft_model: DRAFT}
serving: {max_batch_size: 8}
"""
INPUTS = RenderInputs(engine_dir="/engines/target", draft_engine_dir="/engines/draft", tokenizer_dir="/tok")


@pytest.fixture
def repo(resolve_inline, tmp_path: Path):  # type: ignore[no-untyped-def]
    def make(backend: str, *sets: str) -> Path:
        resolved = resolve_inline(PROFILE.replace("BACKEND", backend), sets=sets)
        out = render_resolved(resolved, tmp_path / "repo", inputs=INPUTS).out
        assert check_repo(out) == []
        return out

    return make


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


def _messages(repo: Path) -> list[str]:
    return [i.render() for i in check_repo(repo)]


def test_llmapi_model_yaml_without_model(repo) -> None:  # type: ignore[no-untyped-def]
    out = repo("pytorch")
    yaml_file = out / "tensorrt_llm/1/model.yaml"
    yaml_file.write_text(
        "".join(line for line in yaml_file.read_text().splitlines(True) if not line.startswith("model:"))
    )
    assert _messages(out) == [
        "tensorrt_llm/1/model.yaml: no `model:` (the checkpoint folder or hub id): "
        "LLM(model, ...) has no default, so the model never loads (TB "
        "all_models/llmapi/tensorrt_llm/1/model.yaml:4)"
    ]


def test_llmapi_stop_dims(repo) -> None:  # type: ignore[no-untyped-def]
    out = repo("pytorch")
    _edit(
        out / "tensorrt_llm/config.pbtxt",
        '"sampling_param_stop" data_type: TYPE_STRING dims: [ -1 ]',
        '"sampling_param_stop" data_type: TYPE_STRING dims: [ 1 ]',
    )
    assert _messages(out) == [
        "tensorrt_llm/config.pbtxt:17: sampling_param_stop dims [1]: a list of stop strings "
        "is dims [-1] (TL all_models/llmapi/tensorrt_llm/config.pbtxt @ 0a71057)"
    ]


def test_llmapi_instances_without_gpu_groups(repo) -> None:  # type: ignore[no-untyped-def]
    out = repo("pytorch")
    _edit(out / "tensorrt_llm/config.pbtxt", "count: 1 kind: KIND_CPU", "count: 2 kind: KIND_CPU")
    assert _messages(out) == [
        "tensorrt_llm/config.pbtxt:28: 2 instances but no gpu_device_ids: every instance "
        "would load the LLM on the same GPUs (TL llmapi model.py @ 044a90d refuses this)"
    ]


def test_instance_count_against_gpu_groups(repo) -> None:  # type: ignore[no-untyped-def]
    out = repo("pytorch", "triton.instances=2")
    _edit(out / "tensorrt_llm/config.pbtxt", "count: 2 kind: KIND_CPU", "count: 1 kind: KIND_CPU")
    assert _messages(out) == [
        "tensorrt_llm/config.pbtxt:28: instance_group count 1 but gpu_device_ids '0;1' has "
        "2 group(s): one instance per group"
    ]
    engine = repo("tensorrt", "triton.instances=2", "speculative.mechanism=medusa", "speculative.draft_model=TARGET")
    _edit(engine / "tensorrt_llm/config.pbtxt", "count: 2 kind: KIND_CPU", "count: 1 kind: KIND_CPU")
    assert _messages(engine) == [
        "tensorrt_llm/config.pbtxt:51: instance_group count 1 but gpu_device_ids '0;1' "
        "has 2 group(s): one instance per group"
    ]


def test_engine_random_seed(repo) -> None:  # type: ignore[no-untyped-def]
    out = repo("tensorrt")
    for model in ("tensorrt_llm", "tensorrt_llm_draft"):
        _edit(out / f"{model}/config.pbtxt", 'name: "seed"', 'name: "random_seed"')
    _edit(out / "ensemble/config.pbtxt", 'key: "seed" value: "seed"', 'key: "random_seed" value: "seed"')
    messages = _messages(out)
    for model in ("tensorrt_llm", "tensorrt_llm_draft"):
        assert (
            f"{model}/config.pbtxt:28: input random_seed: the tensorrtllm backend reads only `seed` (TB "
            "inflight_batcher_llm/src/utils.h:97), so the seed would be dropped silently; rename it to seed" in messages
        )


def test_engine_kv_fractions_on_a_shared_gpu(repo) -> None:  # type: ignore[no-untyped-def]
    out = repo("tensorrt")
    for model in ("tensorrt_llm", "tensorrt_llm_draft"):
        _edit(out / f"{model}/config.pbtxt", 'string_value: "0.45"', 'string_value: "0.9"')
    assert _messages(out) == [
        "tensorrt_llm_draft/config.pbtxt:59: tensorrt_llm and tensorrt_llm_draft share GPU(s) "
        "[0] but their kv_cache_free_gpu_mem_fraction add up to 1.8 (> 1): split it, e.g. 0.45 "
        "each (TL examples/draft_target_model/README.md @ 11925f6 uses 0.5 each)"
    ]


def test_engine_two_models_need_orchestrator_mode(repo) -> None:  # type: ignore[no-untyped-def]
    out = repo("tensorrt")
    manifest = json.loads((out / "specdeploy-repo.json").read_text())
    assert manifest["server_env"] == {"TRTLLM_ORCHESTRATOR": "1"}
    (out / "specdeploy-repo.json").write_text(json.dumps({**manifest, "server_env": None}))
    assert _messages(out) == [
        "specdeploy-repo.json: 2 tensorrtllm models (tensorrt_llm, tensorrt_llm_draft) need "
        "orchestrator mode: server_env TRTLLM_ORCHESTRATOR=1 (launch_triton_server.py "
        "--multi-model; TB model_instance_state.cc:247-253)"
    ]


def test_serve_starts_tritonserver_in_orchestrator_mode(repo, monkeypatch, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """`specdeploy serve` gives tritonserver the manifest's server_env (the draft/target engine repository's)."""
    from specdeploy.serve import local

    out = repo("tensorrt")
    seen = {}

    class Stop(Exception):
        pass

    def fake_start(*_args, env=None, **_kwargs):  # type: ignore[no-untyped-def]
        seen["env"] = env
        raise Stop

    monkeypatch.setattr(local, "prepare_backends", lambda _folder: tmp_path)
    monkeypatch.setattr(local, "start_server", fake_start)
    with pytest.raises(Stop):
        local.start(out)
    assert seen["env"] == {"TRTLLM_ORCHESTRATOR": "1"}


def test_llmapi_arguments_against_the_release_table(repo) -> None:  # type: ignore[no-untyped-def]
    """model.yaml goes to LLM() unchanged: a key the release's TorchLlmArgs lacks fails there (and here)."""
    out = repo("pytorch")
    assert json.loads((out / "specdeploy-repo.json").read_text())["trtllm_version"] == "1.2.1"
    _edit(out / "tensorrt_llm/1/model.yaml", "max_batch_size: 8", "max_batch_sise: 8")
    assert _messages(out) == [
        "tensorrt_llm/1/model.yaml: LLM() argument max_batch_sise: unknown field (TensorRT-LLM 1.2.1)"
    ]
