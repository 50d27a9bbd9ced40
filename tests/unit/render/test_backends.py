"""The Triton backend folder is prepared once per content and never rewritten in place: a running tritonserver
has its `libtriton_python.so` mapped (rewriting it crashed the first server when a second `serve` started)."""

from __future__ import annotations

from pathlib import Path

import pytest

from specdeploy.errors import StepFailed
from specdeploy.render import backends


@pytest.fixture
def no_pip(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """A double for the `pip install numpy<2` subprocess: records where it would install, writes a marker."""
    if backends.pytriton_root() is None:
        pytest.skip("nvidia-pytriton is not installed: the triton extra")
    installs: list[Path] = []

    def install(target: Path, version: str, *, log_path: Path) -> None:  # noqa: ARG001
        installs.append(target)
        (target / "numpy").mkdir()

    monkeypatch.setattr(backends, "_install_numpy", install)
    return installs


def test_a_second_prepare_never_touches_the_folder_a_server_uses(tmp_path: Path, no_pip: list[Path]) -> None:
    folder = backends.prepare_backends(tmp_path)
    lib = folder / "python" / "libtriton_python.so"
    before = lib.stat()
    again = backends.prepare_backends(tmp_path)
    after = lib.stat()
    assert again == folder and len(no_pip) == 1
    assert (after.st_ino, after.st_ctime_ns, after.st_mtime_ns) == (
        before.st_ino,
        before.st_ctime_ns,
        before.st_mtime_ns,
    )
    assert (folder / "python" / "numpy").is_dir() and (
        folder / "python" / "triton_python_backend_stub"
    ).stat().st_mode & 0o111


def test_other_contents_get_another_folder(tmp_path: Path, no_pip: list[Path]) -> None:  # noqa: ARG001
    model = tmp_path / "fake.py"
    model.write_text("# one\n")
    first = backends.prepare_backends(tmp_path / "cache", extra={"tensorrtllm": model})
    model.write_text("# two\n")
    second = backends.prepare_backends(tmp_path / "cache", extra={"tensorrtllm": model})
    assert first != second and (first / "tensorrtllm" / "model.py").read_text() == "# one\n"


def test_a_failed_prepare_leaves_no_folder_behind(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    no_pip: list[Path],  # noqa: ARG001
) -> None:
    def broken(target: Path, version: str, *, log_path: Path) -> None:  # noqa: ARG001
        raise StepFailed("pip failed")

    monkeypatch.setattr(backends, "_install_numpy", broken)
    with pytest.raises(StepFailed):
        backends.prepare_backends(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_an_unwritable_cache_is_a_step_failure_not_a_crash(tmp_path: Path, no_pip: list[Path]) -> None:  # noqa: ARG001
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(StepFailed) as err:
        backends.prepare_backends(blocker / "cache")
    assert "SPECDEPLOY_CACHE" in str(err.value)
