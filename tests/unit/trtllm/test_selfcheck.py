"""Self-check against an installed TensorRT-LLM, with the TEST DOUBLE tests/fixtures/installed_trtllm (a
`tensorrt_llm` package laid out like the wheel: `__version__`, `llmapi/llm_args.py` with TorchLlmArgs)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from specdeploy.engines.trtllm.llm_api import llm_api_options
from specdeploy.engines.trtllm.selfcheck import Installed, require_pinned, validate_options
from specdeploy.errors import UsageError
from tests.helpers import tiny_llama_profile, write_profile
from tests.unit.trtllm.cases import PYTORCH

DOUBLE = Path(__file__).resolve().parents[2] / "fixtures" / "installed_trtllm"
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def double(monkeypatch: pytest.MonkeyPatch) -> None:
    """The double importable here (find_spec) and in the self-check's subprocess (PYTHONPATH)."""
    monkeypatch.syspath_prepend(str(DOUBLE))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(DOUBLE), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("FAKE_TENSORRT_LLM_VERSION", "1.3.0")


def _cli(*args: str, version: str | None, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(DOUBLE), str(ROOT), str(ROOT / "plugins")])}
    if version is None:
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "plugins")])
    else:
        env["FAKE_TENSORRT_LLM_VERSION"] = version
    return subprocess.run(
        [sys.executable, "-m", "specdeploy", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
        check=False,
    )


@pytest.mark.usefixtures("double")
def test_installed_torchllmargs_judges_the_emitted_file(resolve_case: Any) -> None:
    resolved = resolve_case("s", PYTORCH["pytorch-1.3.0-eagle3-schedule"])
    spec = resolved.profile.speculative
    options = llm_api_options(resolved, draft_len=4, schedule=spec.schedule, max_concurrency=spec.max_concurrency)
    assert validate_options(yaml.safe_dump(options), "meta-llama/Llama-3.1-8B-Instruct") == Installed("1.3.0")
    both = {**options, "speculative_config": {**options["speculative_config"], "max_concurrency": 24}}
    found = validate_options(yaml.safe_dump(both), "m")
    assert found is not None and found.version == "1.3.0" and "mutually exclusive" in (found.error or "")


def test_not_installed_means_no_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("importlib.util.find_spec", lambda *_: None)
    assert validate_options("{}", "m") is None


def test_a_pin_other_than_the_installed_release_is_refused() -> None:
    require_pinned("1.3.0", Installed("1.3.0"))
    require_pinned("1.3.0", None)
    with pytest.raises(UsageError) as err:
        require_pinned("1.3.0", Installed("1.3.0rc23"))
    assert "pins TensorRT-LLM 1.3.0, but 1.3.0rc23 is installed (contract range 1.3.0rc23-rc26)" in err.value.message
    assert "runtime.trtllm_version: 1.3.0rc23" in (err.value.hint or "")


def test_build_refuses_a_mismatched_install_with_exit_2(tmp_path: Path) -> None:
    profile = write_profile(tmp_path / "p.yaml", PYTORCH["pytorch-1.3.0-eagle3"])
    result = _cli("build", str(profile), "--out", str(tmp_path / "out"), version="1.3.0rc23", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "pins TensorRT-LLM 1.3.0, but 1.3.0rc23 is installed" in result.stderr
    assert not (tmp_path / "out").exists()  # nothing half-written


def test_doctor_names_the_installed_release_and_its_contract_range(tmp_path: Path) -> None:
    # no GPU here: doctor exits 1 and its report is the JSON error object's `result`
    report = json.loads(_cli("--json", "doctor", version="1.3.0rc14", cwd=tmp_path).stdout)["result"]
    assert report["tensorrt_llm"] == "1.3.0rc14"
    assert report["trtllm_contract"].startswith("1.3.0rc14-rc22 (UNKNOWN: 1.3.mtp_rc15_rc22")
    assert "TensorRT-LLM" not in report["missing"]  # found by import (no package metadata): not missing either
    absent = json.loads(_cli("--json", "doctor", version=None, cwd=tmp_path).stdout)["result"]
    assert absent["trtllm_contract"] == "-"


def _unimportable_install(root: Path, version: str) -> Path:
    """A TEST DOUBLE of a wheel installed on a host without a GPU driver: its metadata says `version`, and
    `import tensorrt_llm` fails the way the real one does without libcuda."""
    (root / "tensorrt_llm").mkdir(parents=True)
    (root / "tensorrt_llm" / "__init__.py").write_text(
        "raise ImportError('libcuda.so.1: cannot open shared object file: No such file or directory')\n"
    )
    info = root / f"tensorrt_llm-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: tensorrt_llm\nVersion: {version}\n")
    return root


def test_an_install_that_cannot_be_imported_here_does_not_fail_the_build(tmp_path: Path) -> None:
    """CI without a GPU: the pin is checked from the wheel's metadata (as doctor reads it), and the emitted
    YAML, which cannot be checked here, is written with a warning instead of failing the build (exit 1)."""
    install = _unimportable_install(tmp_path / "site", "1.3.0")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(install), str(ROOT), str(ROOT / "plugins")])}
    profile = tiny_llama_profile(tmp_path, runtime={"trtllm_version": "1.3.0", "backend": "pytorch"})
    argv = [
        sys.executable,
        "-m",
        "specdeploy",
        "build",
        str(profile),
        "--out",
        str(tmp_path / "out"),
        "--only",
        "fetch",
        "--only",
        "emit",
    ]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "not checked against the installed TensorRT-LLM" in done.stderr
    assert (tmp_path / "out" / "tiny" / "llm_api_options.yaml").is_file()
    tiny_llama_profile(tmp_path, runtime={"trtllm_version": "1.3.0rc23", "backend": "pytorch"})  # same file, other pin
    refused = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120, check=False)
    assert refused.returncode == 2 and "pins TensorRT-LLM 1.3.0rc23, but 1.3.0 is installed" in refused.stderr


def test_an_import_that_hangs_is_a_failed_check_not_an_internal_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`import tensorrt_llm` can hang (MPI init): past the timeout it is StepFailed, which emit turns into a
    warning, never subprocess.TimeoutExpired (an internal error, exit 3)."""
    from specdeploy.engines.trtllm import selfcheck
    from specdeploy.errors import StepFailed

    (tmp_path / "tensorrt_llm").mkdir()
    (tmp_path / "tensorrt_llm" / "__init__.py").write_text("import time\ntime.sleep(30)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setattr(selfcheck, "TIMEOUT_S", 1)
    with pytest.raises(StepFailed) as err:
        validate_options("{}", "m")
    assert "did not answer within 1 s" in err.value.message, err.value.message
