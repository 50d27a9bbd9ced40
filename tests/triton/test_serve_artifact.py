"""A built cpu-smollm2 artifact through `serve` (issue 30 items 1, 3, 4, 11): the verify gate refuses a planted
version or bytecode, a build into the artifact while it is served is refused, and build -> serve -> stop leaves an
artifact that `verify` passes (an invariant of the issue's "Done when")."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.triton.helpers import ENV, MODEL, planted_bytecode, serve_gated, stop

BUILD = ("build", "cpu-smollm2", "--set", "speculative.draft_len=1")  # no tune: minutes saved, same files


def specdeploy(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "specdeploy", *args], env=ENV, capture_output=True, text=True, timeout=600, check=False
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("built")
    done = specdeploy(*BUILD, "--out", str(root))
    assert done.returncode == 0, done.stderr
    return root


def test_build_serve_stop_then_verify_passes(built: Path, backends: Path) -> None:  # noqa: ARG001
    """Before: the stub wrote __pycache__/model.cpython-311.pyc into triton/ (verify failed after every serve), and
    a build into the served artifact swapped triton/ under the running server without a word."""
    pytest.importorskip("torch")
    artifact = built / "cpu-smollm2"
    process, state = serve_gated(artifact, ENV)
    try:
        assert state is not None, stop(process)
        again = specdeploy(*BUILD, "--out", str(built), "--set", "serving.max_batch_size=2")
        assert again.returncode == 2, again.stderr
        assert "`specdeploy serve` is serving it" in again.stderr and str(state["pid"]) in again.stderr
    finally:
        output = stop(process)
    assert process.returncode == 0, output
    verified = specdeploy("verify", str(artifact))
    assert verified.returncode == 0, verified.stdout + verified.stderr


@pytest.mark.parametrize("plant", ["version", "bytecode"])
def test_a_planted_version_or_bytecode_fails_the_gate(built: Path, tmp_path: Path, plant: str) -> None:
    """Before: `cp -a` an artifact, add triton/smollm2/2/model.py, `serve` it: Triton served version 2."""
    artifact = tmp_path / "copy"
    shutil.copytree(built / "cpu-smollm2", artifact, symlinks=True)
    model = artifact / "triton" / "smollm2" / "1" / "model.py"
    if plant == "version":
        (model.parent.parent / "2").mkdir()
        (model.parent.parent / "2" / "model.py").write_text(MODEL.format(add=1000))
        named = "triton/smollm2/2/model.py"
    else:
        planted_bytecode(model)
        named = f"triton/smollm2/1/__pycache__/model.{sys.implementation.cache_tag}.pyc"
    process, state = serve_gated(artifact, ENV)
    output = stop(process)
    assert state is None and process.returncode == 1, output
    assert "fails `specdeploy verify`" in output and f"drift: {named} (" in output
