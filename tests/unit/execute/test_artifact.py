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
    held, released = threading.Event(), threading.Event()

    def hold() -> None:  # another "build", in another thread
        with FileLock(str(lock_path)):
            held.set()
            released.wait(0.5)
            released.set()

    threading.Thread(target=hold).start()
    held.wait(10)
    messages: list[str] = []
    result = tune("h200-eagle3", backend="model", out=tmp_path, say=messages.append)
    assert released.is_set() and messages[0].startswith("waiting for another build of h200-eagle3")
    assert result["schedule"]["schedule"]


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


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"only": ("nosuch",)}, "no step or stage 'nosuch'"),
    ({"start": "rendr"}, "no step or stage 'rendr'"),
    ({"out": "file/under"}, "cannot create the artifact folder"),
])
def test_build_refuses_bad_usage_before_asking_the_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       kwargs: dict, message: str) -> None:
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
