"""`specdeploy render` as a user runs it: `--pretend` writes nothing, a standalone render of `draft_len: auto`
says which K it serves, and an artifact folder that cannot be or an engine without a Triton layout is a usage
error. In process through `main`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import cli


def test_render_pretend_creates_no_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = cli("render", "h100-ngram", "--pretend")
    assert result.code == 0, result.err
    assert "would write" in result.out and list(tmp_path.iterdir()) == []


def test_standalone_render_of_auto_says_which_k_it_serves(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = cli("render", "h200-eagle3", "--pretend", "--json")
    assert result.code == 0, result.err
    assert "warning: speculative.draft_len is auto, which only a tune decides" in result.err
    (warning,) = json.loads(result.out)["warnings"]
    assert "serves a fixed K = " in warning and "specdeploy build" in warning
    fixed = cli("render", "h200-eagle3", "--pretend", "--set", "speculative.draft_len=3")
    assert fixed.code == 0 and "warning" not in fixed.err


@pytest.mark.parametrize("target", [(), ("--target", "container")])
def test_render_out_under_a_file_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: tuple[str, ...]
) -> None:
    """--out whose parent cannot be a folder (a file in the way): exit 2 naming it, never an internal error."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("x")
    code, _, err = cli("render", "h200-eagle3", *target, "--out", "afile/sub")
    assert code == 2 and "cannot create the artifact folder" in err, err
    assert "internal error" not in err and "Traceback" not in err


def test_render_of_a_vllm_profile_renders_tritons_vllm_backend_layout(tmp_path: Path) -> None:
    """vLLM serves itself (build writes no Triton repository), but `render` of its profile writes the repository of
    Triton's vLLM backend for a Triton host."""
    code, out, err = cli("render", "h100-vllm-eagle3", "--pretend", "--out", str(tmp_path))
    assert code == 0, err
    assert "tensorrt_llm/1/model.json" in out and "vllm repository" in out
