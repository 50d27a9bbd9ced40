"""The artifact folder: one lock for build and tune, never a write outside --out, and an unusable --out is a
usage error (it was an internal error, exit 3)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from filelock import FileLock

from specdeploy.api import build, tune
from specdeploy.errors import UsageError
from specdeploy.execute.artifact import artifact_folder


def test_tune_waits_for_the_lock_a_build_holds(tmp_path: Path) -> None:
    """`tune` and `build` into the same --out mixed their outputs: tune took no lock."""
    lock_path = tmp_path / "h200-eagle3" / ".specdeploy" / "build.lock"
    lock_path.parent.mkdir(parents=True)
    held, asked = threading.Event(), threading.Event()

    def hold() -> None:  # another "build", in another thread: it lets go once tune says it waits
        with FileLock(str(lock_path)):
            held.set()
            asked.wait(60)

    threading.Thread(target=hold).start()
    held.wait(10)
    messages: list[str] = []

    def say(message: str) -> None:
        messages.append(message)
        if message.startswith("waiting for another build"):
            asked.set()

    result = tune("h200-eagle3", backend="model", out=tmp_path, say=say)
    assert asked.is_set() and messages[0].startswith("waiting for another build of h200-eagle3")
    assert result.schedule["schedule"]


def test_out_that_is_a_file_is_a_usage_error(tmp_path: Path) -> None:
    out = tmp_path / "file"
    out.write_text("")
    with pytest.raises(UsageError) as err:
        build("h200-eagle3", out=out, only=("emit",))
    assert "cannot create the artifact folder" in str(err.value)


def test_a_name_that_leaves_out_is_refused(tmp_path: Path) -> None:
    for name in ("..", "../x", "a/b", ".hidden", ""):
        with pytest.raises(UsageError):
            artifact_folder(tmp_path / "out", name)
    assert not (tmp_path / "out").exists()


def test_a_folder_holding_something_else_is_refused(tmp_path: Path) -> None:
    """`build` wrote manifest.json, specdeploy.lock and .gitignore among a user's files (render refuses that)."""
    mine = tmp_path / "out" / "h200-eagle3"
    mine.mkdir(parents=True)
    (mine / "notes.txt").write_text("mine")
    with pytest.raises(UsageError) as err:
        artifact_folder(tmp_path / "out", "h200-eagle3")
    assert "not empty and not an artifact folder specdeploy wrote" in str(err.value)
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt"]
    for ours in ("manifest.json", "specdeploy.lock", "tune"):  # a committed artifact has no .specdeploy/
        folder = tmp_path / ours / "x"
        folder.mkdir(parents=True)
        (folder / ours).touch()
        assert artifact_folder(tmp_path / ours, "x") == folder.resolve()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"only": ("nosuch",)}, "no step or stage 'nosuch'"),
        ({"start": "rendr"}, "no step or stage 'rendr'"),
        ({"out": "file/under"}, "cannot create the artifact folder"),
    ],
)
def test_build_refuses_bad_usage_before_asking_the_hub(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kwargs: dict, message: str
) -> None:
    """Offline, each hub lookup retried for ~23 s: a typo in --only was reported after 46 s of retries."""
    from specdeploy.resolve import hub

    asked: list[str] = []
    monkeypatch.setattr(hub, "_fetch_online", lambda ref, *_: asked.append(ref))  # the network boundary
    (tmp_path / "file").write_text("")
    out = tmp_path / kwargs.pop("out", "out")
    with pytest.raises(UsageError) as err:
        build("h200-eagle3", out=out, **kwargs)
    assert message in str(err.value) and asked == []
    assert not (tmp_path / "out").exists()


def test_an_artifact_folder_that_is_a_file_is_refused_before_the_hub(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OUT/<profile> a file passed the check: the error came after ~46 s of offline hub retries."""
    from specdeploy.resolve import hub

    asked: list[str] = []
    monkeypatch.setattr(hub, "_fetch_online", lambda ref, *_: asked.append(ref))  # the network boundary
    (tmp_path / "h200-eagle3").touch()
    with pytest.raises(UsageError) as err:
        build("h200-eagle3", out=tmp_path, only=("emit.llm_api",))
    assert "h200-eagle3: it is not a folder" in str(err.value) and asked == []


def test_an_unwritable_or_unreadable_artifact_folder_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """These run as root, whom permissions do not stop: doubles stand in for the OS's answers."""
    import os

    folder = tmp_path / "h200-eagle3"
    folder.mkdir()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: Path(p) != folder and real_access(p, mode))  # read-only
    with pytest.raises(UsageError) as err:
        artifact_folder(tmp_path, "h200-eagle3")  # it passed the check
    assert "h200-eagle3: it is not writable" in str(err.value)
    monkeypatch.setattr(os, "access", real_access)

    def unreadable(self: Path) -> None:  # mode 0o300: a PermissionError traceback, exit 3
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "iterdir", unreadable)
    with pytest.raises(UsageError) as err:
        artifact_folder(tmp_path, "h200-eagle3")
    assert "cannot read the artifact folder" in str(err.value) and "Permission denied" in str(err.value)


def test_a_folder_holding_only_vcs_and_finder_files_is_empty(tmp_path: Path) -> None:
    folder = tmp_path / "h200-eagle3"
    folder.mkdir()
    for name in (".gitignore", ".gitkeep", ".DS_Store"):
        (folder / name).touch()
    assert artifact_folder(tmp_path, "h200-eagle3") == folder.resolve()  # "not empty and not an artifact folder"


def test_tune_refuses_a_backend_before_creating_the_artifact_folder(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as err:
        tune("h200-eagle3", backend="reference", out=tmp_path)
    assert "runtime.backend: reference" in str(err.value)
    assert not (tmp_path / "h200-eagle3").exists()  # it left h200-eagle3/.specdeploy/build.lock behind
