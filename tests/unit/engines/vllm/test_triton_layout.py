"""The `vllm` Triton layout (issue 27 item 7): Triton's vLLM backend as triton-inference-server/vllm_backend
@ r24.10 declares it (the contract table tables/triton-vllm-r24.10.json), model.json as the same settings
vllm-serve.yaml carries, rendered only when a profile names the layout, and what check-repo refuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from specdeploy.api import load_and_resolve
from specdeploy.engines.vllm.actions import CONFIG_FILE, vllm_files
from specdeploy.engines.vllm.triton_args import contract
from specdeploy.errors import UsageError
from specdeploy.plan.planner import make_plan
from specdeploy.render.actions import render_resolved
from specdeploy.render.check import check_repo
from specdeploy.render.check_pbtxt import model_config_pb2, parse_config
from tests.helpers import needs_triton_schema

pytestmark = needs_triton_schema

ROOT = Path(__file__).resolve().parents[4]
EAGLE3 = ROOT / "profiles" / "h100" / "h100-vllm-eagle3.yaml"
SETS = ("speculative.draft_len=3", "triton.model_name=vllm_model")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    render_resolved(load_and_resolve(str(EAGLE3), SETS), tmp_path / "triton")
    return tmp_path / "triton"


def _tensors(tensors: object) -> list[dict[str, object]]:
    schema = model_config_pb2()
    return [
        {
            "name": t.name,
            "data_type": schema.DataType.Name(t.data_type),
            "dims": list(t.dims),
            "optional": bool(getattr(t, "optional", False)),
        }
        for t in tensors
    ]  # type: ignore[attr-defined]


def test_the_rendered_config_is_what_the_backend_declares(repo: Path) -> None:
    table = contract()
    config, problem = parse_config((repo / "vllm_model" / "config.pbtxt").read_text(), "config.pbtxt")
    assert problem is None and config is not None
    assert config.backend == table["backend"] == "vllm"
    assert _tensors(config.input) == [
        {k: t[k] for k in ("name", "data_type", "dims", "optional")} for t in table["inputs"]
    ]
    assert _tensors(config.output) == [{**t, "optional": False} for t in table["outputs"]]
    assert config.model_transaction_policy.decoupled is table["config"]["decoupled"]["value"]
    assert config.max_batch_size == table["config"]["max_batch_size"]["value"]
    assert [model_config_pb2().ModelInstanceGroup.Kind.Name(g.kind) for g in config.instance_group] == ["KIND_MODEL"]
    assert all(" @ " in source for source in table["sources"].values())  # every fact cites a file at a ref


def test_model_json_carries_what_vllm_serve_yaml_carries(repo: Path) -> None:
    resolved = load_and_resolve(str(EAGLE3), SETS)
    served = yaml.safe_load(vllm_files(resolved, {})[0][CONFIG_FILE])
    args = json.loads((repo / "vllm_model" / "1" / "model.json").read_text())
    assert args == {k.replace("-", "_"): v for k, v in served.items() if k not in ("host", "port")}
    assert args["speculative_config"] == {
        "method": "eagle3",
        "num_speculative_tokens": 3,
        "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
    }
    assert json.loads((repo / "specdeploy-repo.json").read_text())["vllm_version"] == "0.32.0"


def test_pinned_revisions_reach_the_engine_and_the_drafter(tmp_path: Path) -> None:
    """model.json is passed to vLLM as it is: a hub commit is `revision`, never a ${HF_HUB_CACHE} path."""
    sets = (*SETS, "target.revision=" + "a" * 40, "speculative.draft_revision=" + "b" * 40)
    render_resolved(load_and_resolve(str(EAGLE3), sets), tmp_path / "triton")
    args = json.loads((tmp_path / "triton" / "vllm_model" / "1" / "model.json").read_text())
    assert args["model"] == "meta-llama/Llama-3.1-8B-Instruct" and args["revision"] == "a" * 40
    assert args["speculative_config"]["revision"] == "b" * 40


def test_a_vllm_build_renders_triton_only_when_the_profile_names_the_layout() -> None:
    steps = [s.id for s in make_plan(load_and_resolve(str(EAGLE3))).steps]
    assert "render.triton" not in steps  # vLLM serves itself
    steps = [s.id for s in make_plan(load_and_resolve(str(EAGLE3), ("triton.layout=vllm",))).steps]
    assert steps[-2:] == ["render.triton", "check.triton"]


def test_a_unary_vllm_model_is_refused_at_render(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="decoupled"):
        render_resolved(load_and_resolve(str(EAGLE3), (*SETS, "triton.decoupled=false")), tmp_path / "triton")


def _messages(repo: Path) -> list[str]:
    return [issue.render() for issue in check_repo(repo)]


def test_check_repo_refuses_what_the_backend_would(repo: Path) -> None:
    config, model_json = repo / "vllm_model" / "config.pbtxt", repo / "vllm_model" / "1" / "model.json"
    assert _messages(repo) == []
    text = config.read_text()
    config.write_text(text.replace("decoupled: true", "decoupled: false"))
    assert any("needs a decoupled model" in m for m in _messages(repo))
    config.write_text(text.replace("kind: KIND_MODEL", "kind: KIND_GPU"))
    args = json.loads(model_json.read_text())
    model_json.write_text(json.dumps({**args, "tensor_parallel_size": 2}))
    assert any("KIND_GPU with tensor_parallel_size > 1" in m for m in _messages(repo))
    config.write_text(text)
    model_json.write_text(json.dumps({**args, "max_num_seq": 8, "speculative_config": {"method": "eagle9"}}))
    found = _messages(repo)
    assert any("max_num_seq: not an AsyncEngineArgs field" in m for m in found)
    assert any("method 'eagle9'" in m for m in found)
    model_json.write_text(json.dumps({k: v for k, v in args.items() if k != "model"}))
    assert any("no `model`" in m for m in _messages(repo))
