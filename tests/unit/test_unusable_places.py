"""Places that cannot be used say so (issue 30, items 14 and 18): a cache folder that is a file or cannot be made
(was a NotADirectoryError traceback in `generate`, and "the acceptance run failed twice: nothing to predict from"
in a tune), a tritonserver that cannot be run (was a PermissionError traceback), a tune dataset that is a device
or a FIFO (was "dataset file not found"), an `extends` that is a symlink loop (was "no such file" with a
did-you-mean naming the link itself)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from specdeploy.errors import ExitCode, MissingDependency
from tests.helpers import cli, write_profile


@pytest.fixture
def cache_is_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    pytest.importorskip("torch", reason="generate and a reference tune run torch: the reference extra")
    file = tmp_path / "cache"
    file.write_text("")
    monkeypatch.setenv("SPECDEPLOY_CACHE", str(file))
    return file


def test_generate_names_a_cache_variable_that_points_at_a_file(cache_is_a_file: Path) -> None:
    code, _, err = cli("generate", "cpu-smollm2", "hi")
    assert code == ExitCode.INVALID
    assert f"specdeploy's cache folder SPECDEPLOY_CACHE={cache_is_a_file} is not usable: a file, not a folder" in err


def test_generate_names_a_default_cache_that_cannot_be_made(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torch", reason="generate and a reference tune run torch: the reference extra")
    home = tmp_path / "home"
    home.mkdir()
    (home / ".cache").write_text("")  # HOME's .cache is no folder: ~/.cache/specdeploy cannot be made
    monkeypatch.delenv("SPECDEPLOY_CACHE", raising=False)
    monkeypatch.setenv("HOME", str(home))
    code, _, err = cli("generate", "cpu-smollm2", "hi")
    assert code == ExitCode.INVALID
    assert f"specdeploy's cache folder {home}/.cache/specdeploy (the default, under HOME) is not usable" in err


def test_a_tune_says_the_cache_is_unusable(cache_is_a_file: Path, tmp_path: Path) -> None:
    code, _, err = cli("tune", "cpu-smollm2", "--backend", "reference", "--out", str(tmp_path / "out"))
    assert code == ExitCode.INVALID and "nothing to predict from" not in err
    assert f"SPECDEPLOY_CACHE={cache_is_a_file} is not usable: a file, not a folder" in err


def test_a_tritonserver_that_cannot_be_run_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from specdeploy.render import backends, server

    binary = tmp_path / "pytriton" / "tritonserver" / "bin" / "tritonserver"
    binary.parent.mkdir(parents=True)
    binary.write_bytes(b"\x7fELF")
    binary.chmod(0o644)  # not executable: the OS refuses to run it
    monkeypatch.setattr(backends, "pytriton_root", lambda: tmp_path / "pytriton")  # no triton extra needed
    with pytest.raises(MissingDependency) as refused:
        server.start_server(tmp_path / "repo", tmp_path / "backends", tmp_path / "log" / "tritonserver.log")
    assert refused.value.exit_code == ExitCode.STEP_FAILED
    assert refused.value.message == f"cannot run the bundled tritonserver {binary}: Permission denied"


@pytest.mark.parametrize("kind", ["device", "fifo"])
def test_a_dataset_that_is_not_a_regular_file_says_so(tmp_path: Path, kind: str) -> None:
    dataset = Path("/dev/zero") if kind == "device" else tmp_path / "prompts.jsonl"
    if kind == "fifo":
        os.mkfifo(dataset)
    code, _, err = cli("validate", "cpu-smollm2", "--set", f"tune.dataset={dataset}")
    assert code == ExitCode.INVALID
    assert f"dataset {dataset}: not a regular file (a device, FIFO or socket is never read as a dataset)" in err
    assert "not found" not in err


def test_extends_to_a_symlink_loop_says_so(tmp_path: Path) -> None:
    (tmp_path / "loop.yaml").symlink_to("loop.yaml")
    child = write_profile(tmp_path / "child.yaml", "extends: loop.yaml\n")
    code, _, err = cli("validate", str(child))
    assert code == ExitCode.INVALID
    assert "extends 'loop.yaml': a symlink loop (a link that leads back to itself)" in err
    assert "did you mean" not in err and "no such file" not in err


@pytest.mark.parametrize(
    ("meta", "said"),
    [
        ("[" * 3000 + "]" * 3000, "nested deeper than 64 levels"),
        ("{", "not valid JSON"),
        ("[1]", "is not a JSON object"),
    ],
)
def test_a_drafter_whose_marker_is_not_json_is_a_usage_error(tmp_path: Path, meta: str, said: str) -> None:
    from specdeploy.engines.reference.runtime.models import SHARED_META, load_drafter
    from specdeploy.errors import UsageError

    (tmp_path / "config.json").write_text("{}")
    (tmp_path / SHARED_META).write_text(meta)
    with pytest.raises(UsageError, match=f"drafter {tmp_path}: {SHARED_META} .*{said}"):
        load_drafter(str(tmp_path), target=None)
