"""serve's gate and the copy it serves, without a server: an artifact is never taken for a bare repository, a
FIFO manifest is refused without a hang, and a file changed after the gate is not served (issue 30 item 1)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from specdeploy.errors import StepFailed, UsageError
from specdeploy.serve.sealed import gate, seal

MODELS = ("tensorrt_llm",)  # the llmapi layout the tiny build renders


def test_a_verified_artifact_is_copied_file_by_file(art: Path, tmp_path: Path) -> None:
    files = gate(art / "triton", MODELS, print)
    listed = json.loads((art / "manifest.json").read_text())["files"]
    assert {f"triton/{rel}" for rel in files} == {rel for rel in listed if rel.startswith("triton/")}
    served = seal(art / "triton", files, tmp_path / "served")
    assert sorted(p.relative_to(served).as_posix() for p in served.rglob("*") if p.is_file()) == sorted(files)
    assert (served / "tensorrt_llm" / "1").is_dir() and served.stat().st_mode & 0o077 == 0


@pytest.mark.parametrize("manifest", ["missing", "fifo"])
def test_an_artifact_without_a_readable_manifest_is_refused_not_served_bare(art: Path, manifest: str) -> None:
    """Deleting manifest.json must not turn an artifact into a repository served without verify."""
    (art / "manifest.json").unlink()
    if manifest == "fifo":
        os.mkfifo(art / "manifest.json")
    with pytest.raises(UsageError, match="manifest.json"):
        gate(art / "triton", MODELS, print)


def test_a_file_changed_after_the_gate_is_not_served(art: Path, tmp_path: Path) -> None:
    files = gate(art / "triton", MODELS, print)
    (art / "triton" / "tensorrt_llm" / "config.pbtxt").write_text("# swapped after verify\n")
    with pytest.raises(StepFailed, match="changed after `verify` passed it"):
        seal(art / "triton", files, tmp_path / "served")
