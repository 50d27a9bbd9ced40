"""`specdeploy serve` + `specdeploy ask` as a user runs them: a subprocess server, a question, Ctrl-C; and a
service manager's SIGTERM, which must not orphan tritonserver (it runs in a session of its own)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from specdeploy.api import generate
from tests.helpers import gone
from tests.triton.helpers import ENV, SETS, serve_smollm2


def _ask_json(artifact: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """`specdeploy --json ask` of the served artifact, as a user's shell runs it."""
    argv = ["--json", "ask", "What is 2 + 2?", "--artifact", str(artifact), "--max-tokens", "8", *extra]
    return subprocess.run(
        [sys.executable, "-m", "specdeploy", *argv], capture_output=True, text=True, env=ENV, timeout=300
    )


def test_serve_ask_and_ctrl_c(tmp_path: Path, backends: Path) -> None:  # noqa: ARG001 - prepares the backend cache
    pytest.importorskip("torch")
    server, state, triton = serve_smollm2(tmp_path / "art")
    try:
        asked = _ask_json(tmp_path / "art")
        assert asked.returncode == 0, asked.stderr
        answer = json.loads(asked.stdout)
        local = generate("cpu-smollm2", "What is 2 + 2?", SETS, max_tokens=8)
        assert answer["output_ids"] == local.tokens and answer["text_output"] == local.text
        assert answer["draft_len"] == 2
        plain = _ask_json(tmp_path / "art", "--draft-len", "0")
        assert plain.returncode == 0, plain.stderr
        unspeculated = json.loads(plain.stdout)
        assert unspeculated["draft_len"] == 0 and unspeculated["acceptance_rate"] == 0
        assert unspeculated["output_ids"] == local.tokens
    finally:
        os.killpg(server.pid, signal.SIGINT)
        output = server.communicate(timeout=60)[0].decode()
    assert server.returncode == 0, output
    assert "stopping tritonserver" in output and not state.exists() and gone(triton)


def test_sigterm_stops_tritonserver_too(tmp_path: Path, backends: Path) -> None:  # noqa: ARG001
    pytest.importorskip("torch")
    server, state, triton = serve_smollm2(tmp_path / "art")
    server.send_signal(signal.SIGTERM)
    output = server.communicate(timeout=60)[0].decode()
    assert server.returncode == 0, output
    assert "stopping tritonserver" in output and not state.exists() and gone(triton)
