"""What Triton's python stub sees (issue 30 item 19): with a virtualenv of another Python activated, the stub
found that Python's standard library (`_ssl...so: undefined symbol`). `doctor` reports what the stub will see;
the served case runs in tests/triton/test_serve_sealed.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import activated_venv_env, cli

pytestmark = pytest.mark.skipif(
    __import__("importlib").util.find_spec("pytriton") is None, reason="nvidia-pytriton is not installed"
)


def test_doctor_says_what_the_stub_sees_under_an_activated_venv() -> None:
    from specdeploy.render.backends import system_python_version

    env = {**activated_venv_env(Path(sys.prefix)), "PYTHONHOME": None, "PYTHONPATH": "/nowhere"}
    report = json.loads(cli("--json", "doctor", env=env).out)
    line = report.get("result", report)["triton_python_stub"]  # exit 1 where GPU builds cannot run: {error, result}
    assert line.startswith(f"Python {system_python_version()}, standard library of "), line
    assert "PYTHONPATH" in line and "VIRTUAL_ENV" in line


def test_the_stub_environment_keeps_no_python_of_ours() -> None:
    """An allowlist: PYTHON*, VIRTUAL_ENV, LD_PRELOAD and BASH_ENV (bash sources it before exec-ing the stub) never
    pass; the first python3 on its PATH is the stub's own Python, whose ssl imports there."""
    import shutil

    from specdeploy.render.backends import stub_env, stub_python, system_python_version

    source = {
        **activated_venv_env(Path(sys.prefix)),
        "PYTHONPATH": "/x",
        "LD_PRELOAD": "/x.so",
        "BASH_ENV": "/x.sh",
        "HF_HUB_CACHE": "/hub",
        "LD_LIBRARY_PATH": "/cuda",
    }
    env = stub_env({"TRTLLM_ORCHESTRATOR": "1"}, environ=source)
    assert not {"PYTHONPATH", "VIRTUAL_ENV", "LD_PRELOAD", "BASH_ENV"} & set(env)
    assert env["HF_HUB_CACHE"] == "/hub" and env["TRTLLM_ORCHESTRATOR"] == "1"
    assert env["LD_LIBRARY_PATH"].endswith(os.pathsep + "/cuda") and "nvidia_pytriton.libs" in env["LD_LIBRARY_PATH"]
    assert str(Path(sys.prefix) / "bin") not in env["PATH"].split(os.pathsep)
    found = shutil.which("python3", path=env["PATH"])
    assert found is not None and Path(found).parent == stub_python().parent
    seen = subprocess.run(
        [found, "-I", "-c", "import ssl, sys; print('%d.%d' % sys.version_info[:2])"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.strip()
    assert seen == system_python_version()
