"""A build killed at any rename (between the two renames that replace `triton/`, or while an atomic write is in
flight) is set right by the next command that takes the folder's lock: the swap is rolled back or finished, the
temp files go, and the rerun never says ok while `verify` fails."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from specdeploy.api import build
from specdeploy.execute.verify import verify
from tests.helpers import needs_triton_schema

pytestmark = needs_triton_schema  # every test builds, and the build renders Triton's config

LEFTOVER = re.compile(r"^\..+\.(old|new)-|\.tmp$")


def _leftovers(art: Path) -> list[str]:
    return sorted(p.relative_to(art).as_posix() for p in art.rglob("*") if LEFTOVER.search(p.name))


def _build(profile: Any, out: Path, *sets: str) -> Any:
    return build(str(profile.loaded.file), sets, out=out)


def test_a_kill_between_the_two_renames_is_rolled_back(tmp_path: Path, resolved: Any) -> None:
    out, art = tmp_path / "out", tmp_path / "out" / "tiny"
    assert _build(resolved, out).ok
    kept = (art / "triton" / "specdeploy-repo.json").read_bytes()
    (art / "triton").rename(art / ".triton.old-4242")  # killed after the first rename, before the second
    (art / ".manifest.json.k2j4_x9a.tmp").write_text("{half")  # and an atomic write of another run, in flight
    (art / ".specdeploy.lock.abcdefgh.tmp").write_text("{")
    (art / ".specdeploy" / "steps" / ".render.triton.json.zzzzzzzz.tmp").write_text("")
    lines: list[str] = []
    result = build(str(resolved.loaded.file), out=out, report=lines.append)
    assert result.ok and verify(art).ok, verify(art)
    assert (art / "triton" / "specdeploy-repo.json").read_bytes() == kept
    assert _leftovers(art) == []
    assert any(line.startswith("recovered: rolled back an interrupted swap: triton restored") for line in lines)


def test_a_kill_after_the_second_rename_finishes_the_swap(tmp_path: Path, resolved: Any) -> None:
    out, art = tmp_path / "out", tmp_path / "out" / "tiny"
    assert _build(resolved, out).ok
    shutil.copytree(art / "triton", art / ".triton.old-77")  # the replaced tree, never removed
    shutil.copytree(art / "triton", art / ".triton.new-ab_12cd")  # a standalone render's staging
    assert _build(resolved, out, "serving.max_batch_size=4").ok
    assert verify(art).ok and _leftovers(art) == []


def test_a_file_no_step_recorded_fails_the_build_as_verify_would(tmp_path: Path, resolved: Any) -> None:
    """A build said ok over a folder `verify` refuses; now its result says what verify would find."""
    out, art = tmp_path / "out", tmp_path / "out" / "tiny"
    assert _build(resolved, out).ok
    (art / "NOTES.txt").write_text("mine")
    again = _build(resolved, out)
    assert not again.ok and not verify(art).ok
    assert any("NOTES.txt" in p and "not listed" in p for p in again.problems)


def _strace() -> str:
    found = shutil.which("strace")
    if found is None:
        pytest.skip("strace is not installed")
    probe = subprocess.run([found, "-f", "-o", os.devnull, "true"], capture_output=True)
    if probe.returncode:
        pytest.skip(f"strace cannot trace here: {probe.stderr.decode()[:200]}")
    return found


def _cli(*args: str, strace: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*(strace or []), sys.executable, "-m", "specdeploy", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
        timeout=300,
    )


def _renames(strace: str, args: list[str], log: Path) -> list[str]:
    """The rename calls of a build, in order, as `old name -> new name`."""
    done = _cli(
        *args, strace=[strace, "-f", "-qq", "-s", "4096", "-o", str(log), "-e", "trace=rename,renameat,renameat2"]
    )
    assert done.returncode == 0, done.stderr
    calls = re.findall(r'rename\w*\((?:[^,"]+, )?"([^"]+)", (?:[^,"]+, )?"([^"]+)"', log.read_text())
    return [f"{Path(a).name} -> {Path(b).name}" for a, b in calls]


def test_a_real_sigkill_at_each_kind_of_rename_then_a_rerun_recovers(tmp_path: Path, resolved: Any) -> None:
    strace = _strace()
    out, art = tmp_path / "out", tmp_path / "out" / "tiny"
    profile = str(resolved.loaded.file)
    base = ["build", profile, "--out", str(out)]
    assert _cli(*base).returncode == 0
    calls = _renames(strace, [*base, "--set", "serving.max_batch_size=6"], tmp_path / "trace")
    swap = next(i for i, c in enumerate(calls) if c.startswith("triton -> .triton.old-"))
    manifest = next(i for i, c in enumerate(calls) if c.startswith(".manifest.json."))
    lock = next(i for i, c in enumerate(calls) if c.startswith(".specdeploy.lock."))
    for size, at in ((4, swap + 1), (2, manifest), (3, lock)):  # the second rename of the swap; the atomic writes
        changed = [*base, "--set", f"serving.max_batch_size={size}"]
        inject = f"inject=rename,renameat,renameat2:signal=SIGKILL:when={at + 1}"
        killed = _cli(*changed, strace=[strace, "-f", "-qq", "-o", os.devnull, "-e", inject])
        assert killed.returncode != 0 and _leftovers(art), (at, killed.stderr)
        rerun = _cli(*changed)
        assert rerun.returncode == 0, rerun.stderr
        assert verify(art).ok, (at, verify(art))
        assert _leftovers(art) == [], at
