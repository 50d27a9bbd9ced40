"""Every repository check fails on its broken case with the exact message; bad input is escaped or refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specdeploy.errors import StepFailed, UsageError
from specdeploy.render.actions import render_resolved
from specdeploy.render.check import check_repo
from specdeploy.render.env import pbtxt_str
from specdeploy.render.model import RenderInputs
from tests.helpers import needs_triton_schema

pytestmark = needs_triton_schema

ENGINE = """
target: {model: TARGET}
hardware: {gpu: l40s}
runtime: {backend: tensorrt, trtllm_version: 1.2.1}
speculative: {mechanism: MECH, draft_len: 4, draft_model: DRAFT}
serving: {max_batch_size: 8}
"""
INPUTS = RenderInputs(engine_dir="/engines/target", draft_engine_dir="/engines/draft", tokenizer_dir="/tok")


@pytest.fixture
def engine_repo(resolve_inline, tmp_path: Path):  # type: ignore[no-untyped-def]
    def make(mechanism: str = "draft_target") -> Path:
        resolved = resolve_inline(ENGINE.replace("MECH", mechanism))
        return render_resolved(resolved, tmp_path / "repo", inputs=INPUTS).out

    return make


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def _messages(repo: Path) -> list[str]:
    return [i.render() for i in check_repo(repo)]


def test_rendered_engine_repo_is_clean(engine_repo) -> None:  # type: ignore[no-untyped-def]
    assert check_repo(engine_repo()) == []


def test_unknown_pbtxt_field_reports_line_and_column(engine_repo) -> None:  # type: ignore[no-untyped-def]
    repo = engine_repo()
    _edit(repo / "preprocessing/config.pbtxt", "max_batch_size:", "max_batch_sise:")
    assert _messages(repo) == [
        'preprocessing/config.pbtxt:4:1: Message type "inference.ModelConfig" has no field named "max_batch_sise".'
    ]


def test_unfilled_placeholder(engine_repo) -> None:  # type: ignore[no-untyped-def]
    repo = engine_repo()
    config = repo / "tensorrt_llm/config.pbtxt"
    line = next(n for n, text in enumerate(config.read_text().splitlines(), 1) if '"/engines/target"' in text)
    _edit(config, '"/engines/target"', '"${engine_dir}"')
    assert f"tensorrt_llm/config.pbtxt:{line}: unfilled placeholder ${{engine_dir}}" in _messages(repo)


def test_broken_ensemble_map(engine_repo) -> None:  # type: ignore[no-untyped-def]
    repo = engine_repo()
    _edit(repo / "ensemble/config.pbtxt", 'key: "QUERY"', 'key: "QUERIES"')
    assert _messages(repo) == [
        "ensemble/config.pbtxt:31: input_map key 'QUERIES' is not an input of model 'preprocessing' "
        "(mapping to non-existing input)"
    ]


def test_ensemble_dtype_mismatch(engine_repo) -> None:  # type: ignore[no-untyped-def]
    repo = engine_repo()
    _edit(
        repo / "postprocessing/config.pbtxt",
        'name: "SEQUENCE_LENGTH" data_type: TYPE_INT32',
        'name: "SEQUENCE_LENGTH" data_type: TYPE_INT64',
    )
    assert _messages(repo) == [
        "ensemble/config.pbtxt:71: inconsistent data type: '_SEQUENCE_LENGTH' is TYPE_INT32 "
        "(tensorrt_llm.sequence_length), postprocessing.SEQUENCE_LENGTH expects TYPE_INT64"
    ]


def test_ensemble_batch_over_a_step(engine_repo) -> None:  # type: ignore[no-untyped-def]
    repo = engine_repo()
    _edit(repo / "postprocessing/config.pbtxt", "max_batch_size: 8", "max_batch_size: 4")
    assert _messages(repo) == [
        "ensemble/config.pbtxt:5: ensemble max_batch_size 8 exceeds step 'postprocessing' max_batch_size 4"
    ]


def test_decoupled_mismatch_bls_vs_tensorrt_llm(engine_repo) -> None:  # type: ignore[no-untyped-def]
    repo = engine_repo("medusa")
    _edit(repo / "tensorrt_llm_bls/config.pbtxt", "decoupled: false", "decoupled: true")
    assert _messages(repo) == [
        "tensorrt_llm_bls/config.pbtxt:8: decoupled mismatch: tensorrt_llm_bls is true, "
        "tensorrt_llm is false (streaming needs both decoupled)"
    ]


def test_decoupled_mismatch_with_model_yaml(resolve_inline, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    resolved = resolve_inline(ENGINE.replace("tensorrt", "pytorch").replace("MECH", "draft_target"))
    repo = render_resolved(resolved, tmp_path / "repo").out
    _edit(repo / "tensorrt_llm/1/model.yaml", "decoupled: false", "decoupled: true")
    assert _messages(repo) == [
        "tensorrt_llm/1/model.yaml:25: decoupled mismatch: model.yaml "
        "triton_config.decoupled is true, config.pbtxt says false"
    ]


def test_draft_tokens_over_engine_maximum(engine_repo) -> None:  # type: ignore[no-untyped-def]
    repo = engine_repo()
    _edit(repo / "tensorrt_llm_bls/config.pbtxt", 'string_value: "4"', 'string_value: "6"')
    assert _messages(repo) == [
        "tensorrt_llm_bls/config.pbtxt:34: Number of draft tokens (6) is larger than "
        "maximum number of draft tokens (4) of the tensorrt_llm engine"
    ]


def test_draft_len_read_from_the_engine_config(engine_repo, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    repo = engine_repo()
    engine = tmp_path / "engine"
    engine.mkdir()
    (engine / "config.json").write_text(json.dumps({"build_config": {"max_draft_len": 2}}))
    _edit(repo / "tensorrt_llm/config.pbtxt", '"/engines/target"', json.dumps(str(engine)))
    assert "larger than maximum number of draft tokens (2)" in _messages(repo)[0]


def test_gpu_ids_against_tp_and_gpus(engine_repo) -> None:  # type: ignore[no-untyped-def]
    repo = engine_repo("medusa")
    _edit(repo / "tensorrt_llm/config.pbtxt", 'string_value: "0" }', 'string_value: "0,1" }')
    assert _messages(repo) == [
        "tensorrt_llm/config.pbtxt:62: gpu_device_ids group '0,1' has 2 GPU(s), TP x PP = 1",
        "tensorrt_llm/config.pbtxt:62: gpu_device_ids '0,1' names a GPU beyond the profile's 1",
    ]


def test_kind_gpu_over_the_profile(engine_repo) -> None:  # type: ignore[no-untyped-def]
    repo = engine_repo()
    _edit(repo / "preprocessing/config.pbtxt", "count: 1 kind: KIND_CPU", "count: 2 kind: KIND_GPU")
    assert _messages(repo) == ["preprocessing/config.pbtxt:28: KIND_GPU count 2 exceeds the profile's 1 GPU(s)"]


def test_name_and_version_folder(engine_repo) -> None:  # type: ignore[no-untyped-def]
    repo = engine_repo()
    (repo / "ensemble/1").rmdir()
    _edit(repo / "postprocessing/config.pbtxt", 'name: "postprocessing"', 'name: "post"')
    assert sorted(_messages(repo)) == [
        "ensemble: no version folder (e.g. 1/): Triton loads no version",
        "postprocessing/config.pbtxt:2: name 'post' differs from its folder 'postprocessing' (Triton requires "
        "them equal)",
    ]


@pytest.mark.parametrize("value", ['a"b', "{0, 1}, {2}", "x,y;z", "back\\slash", "tab\there", "ünï"])
def test_pbtxt_str_round_trips(value: str) -> None:
    from google.protobuf import text_format
    from tritonclient.grpc import model_config_pb2

    config = text_format.Parse(f"name: {pbtxt_str(value)}", model_config_pb2.ModelConfig())
    assert config.name == value


def test_hostile_paths_are_escaped_or_refused(resolve_inline, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    resolved = resolve_inline(ENGINE.replace("MECH", "draft_target"))
    odd = '/e n"g}i{n,e'
    repo = render_resolved(resolved, tmp_path / "repo", inputs=RenderInputs(engine_dir=odd, tokenizer_dir="/t")).out
    from specdeploy.render.check_pbtxt import load_models, params

    models, issues = load_models(repo)
    assert issues == [] and params(models["tensorrt_llm"].config)["gpt_model_path"] == odd
    with pytest.raises(UsageError) as err:
        render_resolved(resolved, tmp_path / "r2", inputs=RenderInputs(engine_dir="/x\ny"))
    assert "contains a newline or control character" in str(err.value)


@pytest.mark.parametrize("name", ["../evil", "../../evil", 'a"b', "evil\\n", ".hidden", ".."])
def test_bad_model_name_refused_at_validate(resolve_inline, name: str) -> None:  # type: ignore[no-untyped-def]
    """These passed `validate` and failed only at render (exit 1); a trailing newline passed render too."""
    from specdeploy.issues import ProfileError

    body = ENGINE.replace("tensorrt", "reference").replace("l40s", "cpu").replace("MECH", "draft_target")
    with pytest.raises(ProfileError) as err:
        resolve_inline(body + f"triton: {{model_name: {json.dumps(name)}}}\n")
    assert "triton.model_name" in str(err.value) and "is not a valid model folder name" in str(err.value)


def test_symlink_and_foreign_folders_refused(engine_repo, tmp_path: Path, resolve_inline) -> None:  # type: ignore[no-untyped-def]  # noqa: ARG001
    resolved = resolve_inline(ENGINE.replace("MECH", "medusa"))
    (tmp_path / "link").symlink_to(tmp_path)
    with pytest.raises(UsageError) as err:
        render_resolved(resolved, tmp_path / "link", inputs=INPUTS)
    assert "symbolic link" in str(err.value)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(UsageError) as err:
        render_resolved(resolved, tmp_path / "mine", inputs=INPUTS)
    assert "not a repository specdeploy rendered" in str(err.value)


def test_failed_check_leaves_existing_repo_untouched(engine_repo, resolve_inline, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    repo = engine_repo()
    before = {p: p.read_bytes() for p in repo.rglob("*") if p.is_file()}
    resolved = resolve_inline(ENGINE.replace("MECH", "draft_target"))
    with pytest.raises(StepFailed):
        render_resolved(resolved, repo, inputs=RenderInputs(engine_dir="/engines/${x}", tokenizer_dir="/t"))
    assert {p: p.read_bytes() for p in repo.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".repo")) == []


def test_rerender_reports_identical_and_changed(engine_repo, resolve_inline, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    engine_repo()
    resolved = resolve_inline(ENGINE.replace("MECH", "draft_target"), sets=("serving.max_batch_size=4",))
    report = render_resolved(resolved, tmp_path / "repo", inputs=INPUTS)
    assert report.files["preprocessing/1/model.py"] == "identical"
    assert report.files["ensemble/config.pbtxt"] == "changed"
    assert "max_batch_size: 4" in (tmp_path / "repo/ensemble/config.pbtxt").read_text()


def test_a_planted_model_folder_is_reported(engine_repo) -> None:  # type: ignore[no-untyped-def]
    """A model folder the repository's manifest does not name passed check-repo, and `serve` loaded it."""
    import shutil

    repo = engine_repo()
    shutil.copytree(repo / "postprocessing", repo / "evil")
    _edit(repo / "evil/config.pbtxt", 'name: "postprocessing"', 'name: "evil"')
    assert _messages(repo) == [
        "evil: model folder not named in specdeploy-repo.json: not rendered by specdeploy, never served"
    ]


def test_llmapi_model_yaml_names_the_model_llm_requires() -> None:
    """LLM() cannot start without `model` (NVIDIA's llmapi model.yaml names it first); trtllm-serve's options lack
    it (the model is its positional argument)."""
    import yaml

    from specdeploy.api import load_and_resolve
    from specdeploy.render.actions import llm_args_for
    from specdeploy.render.context import build_context
    from specdeploy.render.writer import render_files

    resolved = load_and_resolve("h200-mtp-deepseek-v3-2node")
    files = render_files(build_context(resolved, llm_args=llm_args_for(resolved)))
    model_yaml = yaml.safe_load(files["tensorrt_llm/1/model.yaml"])
    assert model_yaml["model"] == "deepseek-ai/DeepSeek-V3"
    assert model_yaml["tensor_parallel_size"] == 8 and model_yaml["pipeline_parallel_size"] == 2


@pytest.mark.parametrize("manifest", ['{"models": "postprocessing"}', "fifo"])
def test_a_bad_manifest_is_a_problem_and_planted_folders_still_found(engine_repo, manifest: str) -> None:  # type: ignore[no-untyped-def]
    """`{"models": "smollm2"}` or a FIFO as specdeploy-repo.json skipped the planted-folder check."""
    import os

    repo = engine_repo()
    (repo / "postprocessing" / "2").mkdir()
    (repo / "postprocessing" / "2" / "model.py").write_text("import os; os.system('id')\n")
    (repo / "specdeploy-repo.json").unlink()
    if manifest == "fifo":
        os.mkfifo(repo / "specdeploy-repo.json")
        want = "specdeploy-repo.json: not a regular file: the models it names are unknown"
    else:
        (repo / "specdeploy-repo.json").write_text(manifest)
        want = "specdeploy-repo.json: `models` is not a list of model names ('postprocessing')"
    messages = [i.render() for i in check_repo(repo)]
    assert want in messages
    assert any(m.startswith("postprocessing/2: version folder 2/ not rendered by specdeploy") for m in messages)


def test_planted_versions_bytecode_stubs_and_loops_are_reported(engine_repo, resolve_inline) -> None:  # type: ignore[no-untyped-def]
    """check-repo said "no problems" to a planted version folder (Triton serves the highest), a .pyc beside
    model.py, a stub in the model folder, and a symlink loop that render refuses."""
    repo = engine_repo()
    (repo / "preprocessing" / "7").mkdir()
    (repo / "preprocessing" / "1" / "__pycache__").mkdir()
    (repo / "preprocessing" / "1" / "__pycache__" / "model.cpython-311.pyc").write_bytes(b"\0")
    (repo / "postprocessing" / "triton_python_backend_stub").write_bytes(b"\x7fELF")
    (repo / "postprocessing" / "1" / "loop").symlink_to("loop")
    assert sorted(i.file for i in check_repo(repo)) == [
        "postprocessing/1/loop",
        "postprocessing/triton_python_backend_stub",
        "preprocessing/1/__pycache__",
        "preprocessing/7",
    ]
    messages = {i.file: i.message for i in check_repo(repo)}
    assert "loop, or dangling" in messages["postprocessing/1/loop"]
    assert messages["preprocessing/1/__pycache__"].startswith("Python bytecode")
    with pytest.raises(UsageError, match="symbolic link"):  # render refuses the same folder
        render_resolved(resolve_inline(ENGINE.replace("MECH", "draft_target")), repo, inputs=INPUTS)
