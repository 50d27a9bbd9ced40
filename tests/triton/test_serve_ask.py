"""`specdeploy serve` + `specdeploy ask` as a user runs them: a subprocess server, a question, Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from specdeploy.api import generate, load_and_resolve
from specdeploy.render.actions import render_resolved
from specdeploy.render.context import RenderInputs


def test_serve_ask_and_ctrl_c(tmp_path: Path, backends: Path) -> None:  # noqa: ARG001 - prepares the backend cache
    pytest.importorskip("torch")
    sets = ("speculative.draft_len=2",)
    artifact = tmp_path / "art"
    render_resolved(load_and_resolve("cpu-smollm2", sets), artifact / "triton", inputs=RenderInputs())
    env = {**os.environ, "NO_COLOR": "1"}
    server = subprocess.Popen([sys.executable, "-m", "specdeploy", "serve", str(artifact)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    state = artifact / ".specdeploy" / "serve.json"
    try:
        deadline = time.monotonic() + 300
        while not state.exists():
            assert server.poll() is None, server.stdout.read().decode() if server.stdout else ""
            assert time.monotonic() < deadline, "serve did not come up in 300 s"
            time.sleep(0.5)
        asked = subprocess.run([sys.executable, "-m", "specdeploy", "--json", "ask", "What is 2 + 2?",
                                "--artifact", str(artifact), "--max-tokens", "8"],
                               capture_output=True, text=True, env=env, timeout=300)
        assert asked.returncode == 0, asked.stderr
        answer = json.loads(asked.stdout)
        local = generate("cpu-smollm2", "What is 2 + 2?", sets, max_tokens=8)
        assert answer["output_ids"] == local["tokens"] and answer["text_output"] == local["text"]
    finally:
        os.killpg(server.pid, signal.SIGINT)
        output = server.communicate(timeout=60)[0].decode()
    assert server.returncode == 0, output
    assert "stopping tritonserver" in output and not state.exists()
