"""llmapi model.yaml names the checkpoint LLM(model, ...) loads: the build's fetched folder, else the profile's
hub id pinned by its revision, or its local folder (absolute)."""

from __future__ import annotations

from pathlib import Path

import yaml

from specdeploy.api import load_and_resolve
from specdeploy.render.actions import llm_args_for
from specdeploy.render.context import build_context
from specdeploy.render.model import RenderInputs
from specdeploy.render.writer import render_files
from tests.helpers import needs_triton_schema

HUB = """
target: {model: meta-llama/Llama-3.1-8B-Instruct, revision: 0e9e39f249a16976918f6564b8830bc894c89659}
hardware: {gpu: h200}
runtime: {backend: pytorch, trtllm_version: 1.2.1}
speculative: {mechanism: ngram, draft_len: 4}
"""


def _model_yaml(resolved, inputs: RenderInputs | None = None) -> dict:  # type: ignore[no-untyped-def]
    files = render_files(build_context(resolved, inputs, llm_args=llm_args_for(resolved)))
    return yaml.safe_load(files["tensorrt_llm/1/model.yaml"])  # type: ignore[no-any-return]


def test_hub_id_is_pinned_by_its_revision(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(HUB)
    data = _model_yaml(load_and_resolve(str(tmp_path / "p.yaml")))
    assert (data["model"], data["revision"]) == (
        "meta-llama/Llama-3.1-8B-Instruct",
        "0e9e39f249a16976918f6564b8830bc894c89659",
    )


def test_the_fetched_folder_wins_and_needs_no_revision(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(HUB)
    fetched = str(tmp_path / "snapshots" / "0e9e39f")
    data = _model_yaml(load_and_resolve(str(tmp_path / "p.yaml")), RenderInputs(model_dir=fetched))
    assert data["model"] == fetched and "revision" not in data


def test_a_local_folder_is_absolute(resolve_inline) -> None:  # type: ignore[no-untyped-def]
    resolved = resolve_inline(
        HUB.replace(
            "model: meta-llama/Llama-3.1-8B-Instruct, revision: 0e9e39f249a16976918f6564b8830bc894c89659",
            "model: TARGET",
        )
    )
    data = _model_yaml(resolved)
    assert Path(data["model"]).is_absolute() and Path(data["model"], "config.json").is_file()
    assert "revision" not in data


@needs_triton_schema
def test_a_pinned_revision_passes_the_release_contract(tmp_path: Path) -> None:
    """LLM() takes `revision` (BaseLlmArgs): a repository pinned by it renders and passes check-repo."""
    from specdeploy.render.actions import render_resolved
    from specdeploy.render.check import check_repo

    (tmp_path / "p.yaml").write_text(HUB)
    render_resolved(load_and_resolve(str(tmp_path / "p.yaml")), tmp_path / "triton")
    assert yaml.safe_load((tmp_path / "triton/tensorrt_llm/1/model.yaml").read_text())["revision"]
    assert check_repo(tmp_path / "triton") == []
