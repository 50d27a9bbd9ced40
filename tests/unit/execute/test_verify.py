"""`verify` is an integrity gate: a manifest of a failed build, `{}`, wrong types, a planted file and a lock that
disagrees with the build or with the emitted YAML all fail it (each returned 0 before)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specdeploy.execute.manifest import update_lock
from specdeploy.execute.verify import verify
from tests.helpers import needs_triton_schema

pytestmark = needs_triton_schema


def _edit_manifest(art: Path, **changes: object) -> None:
    data = json.loads((art / "manifest.json").read_text())
    data.update(changes)
    (art / "manifest.json").write_text(json.dumps(data))


def test_a_clean_build_verifies(art: Path) -> None:
    report = verify(art)
    assert report.ok and report.problems == [] and report.checked > 5


def test_a_failed_build_does_not_verify(art: Path) -> None:
    _edit_manifest(art, ok=False)
    report = verify(art)
    assert not report.ok and report.problems[0].startswith("manifest.json: records a failed build")


@pytest.mark.parametrize("manifest", [{}, [], "x", None])
def test_a_manifest_that_is_not_one_does_not_verify(art: Path, manifest: object) -> None:
    (art / "manifest.json").write_text(json.dumps(manifest))
    report = verify(art)
    assert not report.ok and report.problems


def test_wrong_types_are_problems_not_crashes(art: Path) -> None:
    _edit_manifest(art, files="not a map", models={"target": {"path": 3}})
    report = verify(art)
    assert not report.ok
    assert "manifest.json: $.files: 'not a map' is not object" in report.problems


def test_every_unlisted_file_is_drift(art: Path) -> None:
    (art / "triton" / "evil" / "1").mkdir(parents=True)
    (art / "triton" / "evil" / "1" / "model.py").write_text("import os\n")
    (art / "notes.txt").write_text("x")
    (art / ".specdeploy" / "logs" / "extra.log").write_text("the tool's own bookkeeping is not the artifact")
    report = verify(art)
    assert [(d["file"], d["actual"]) for d in report.drift] == [
        ("notes.txt", "unlisted"),
        ("triton/evil/1/model.py", "unlisted"),
    ]


def test_a_lock_of_another_build_is_a_problem(art: Path) -> None:
    lock = json.loads((art / "specdeploy.lock").read_text())
    (art / "specdeploy.lock").write_text(json.dumps({**lock, "profile_hash": "0" * 64}))
    assert any("specdeploy.lock: records profile 'tiny' hash 000000000000" in p for p in verify(art).problems)
    (art / "specdeploy.lock").unlink()
    assert verify(art).problems == ["specdeploy.lock: missing"]


def test_a_tuned_schedule_the_yaml_does_not_carry_is_drift(art: Path) -> None:
    update_lock(art, tuned={"emitted": {"draft_len_schedule": {"1": 4, "8": 2}, "max_concurrency": 16}})
    problems = verify(art).problems
    assert "specdeploy.lock: tuned draft_len_schedule {'1': 4, '8': 2} but llm_api_options.yaml carries none" in (
        problems
    )
    assert "specdeploy.lock: tuned max_concurrency 16 but llm_api_options.yaml carries None" in problems
    update_lock(art, tuned={"emitted": None})
    assert verify(art).problems == ["specdeploy.lock: the tune turned speculation off, llm_api_options.yaml speculates"]


def test_a_fifo_in_a_recorded_place_is_reported_not_a_hang(art: Path) -> None:
    """A FIFO (or device) in place of a recorded file or of the lock would be read forever: drift, a problem."""
    import os
    import subprocess
    import sys

    for name in ("serve.sh", "specdeploy.lock"):
        (art / name).unlink()
        os.mkfifo(art / name)
    code = f"from specdeploy.execute.verify import verify; r = verify({str(art)!r}); print(r.drift, r.problems)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "'file': 'serve.sh'" in done.stdout and "'actual': 'not a regular file'" in done.stdout
    assert "specdeploy.lock: not a JSON object (not a regular file)" in done.stdout


@pytest.mark.parametrize("where", ["file", "folder"])
def test_a_listed_file_replaced_by_a_link_to_an_identical_copy_is_drift(art: Path, tmp_path: Path, where: str) -> None:
    """verify hashed through the link: a copy outside the artifact (anyone's to change later) passed."""
    import shutil

    if where == "file":
        shutil.copy(art / "serve.sh", tmp_path / "serve.sh")
        (art / "serve.sh").unlink()
        (art / "serve.sh").symlink_to(tmp_path / "serve.sh")
        linked = ["serve.sh"]
    else:
        shutil.copytree(art / "triton", tmp_path / "triton")
        shutil.rmtree(art / "triton")
        (art / "triton").symlink_to(tmp_path / "triton")
        linked = sorted(r for r in json.loads((art / "manifest.json").read_text())["files"] if r.startswith("triton/"))
    report = verify(art)
    assert not report.ok
    assert [d["file"] for d in report.drift if d["actual"] == "a symbolic link (the build wrote a file)"] == linked


@pytest.mark.parametrize("rel", ["../../../etc/hostname", "/etc/hostname", "triton/../../x"])
def test_manifest_entries_outside_the_artifact_are_problems(art: Path, rel: str) -> None:
    """Entries `../../../etc/hostname` or `/etc/passwd` with their right hashes verified."""
    from specdeploy.execute.hashing import sha256_file

    data = json.loads((art / "manifest.json").read_text())
    data["files"][rel] = sha256_file(Path("/etc/hostname"))
    (art / "manifest.json").write_text(json.dumps(data))
    report = verify(art)
    assert not report.ok
    assert report.problems == [f"manifest.json: files entry {rel!r} is outside the artifact folder"]


def test_bytecode_is_named_for_what_it_is(art: Path) -> None:
    """A planted .pyc showed only the "not listed" drift an innocent serve caused."""
    from specdeploy.execute.verify import drift_line

    (art / "triton" / "tensorrt_llm" / "1" / "__pycache__").mkdir()
    (art / "triton" / "tensorrt_llm" / "1" / "__pycache__" / "model.cpython-311.pyc").write_bytes(b"\0" * 16)
    report = verify(art)
    assert not report.ok
    line = drift_line(report.drift[0])
    assert line.startswith("triton/tensorrt_llm/1/__pycache__/model.cpython-311.pyc (") and "Python bytecode" in line
