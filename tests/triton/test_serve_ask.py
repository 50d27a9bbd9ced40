"""`specdeploy serve` + `specdeploy ask` as a user runs them: a subprocess server, a question, Ctrl-C; and a
service manager's SIGTERM, which must not orphan tritonserver (it runs in a session of its own)."""

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
from specdeploy.render.model import RenderInputs

SETS = ("speculative.draft_len=2",)
ENV = {**os.environ, "NO_COLOR": "1"}


def _as_a_terminal_would() -> None:
    """A background job (`cmd &` in a script, as CI may run us) inherits SIGINT ignored; a terminal's Ctrl-C
    reaches a foreground process with the default disposition, which is what these tests emulate."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def serve(artifact: Path) -> tuple[subprocess.Popen[bytes], Path, int]:
    """Render cpu-smollm2, start `specdeploy serve` on it, wait until every model is loaded: (process, state, pid
    of tritonserver)."""
    render_resolved(load_and_resolve("cpu-smollm2", SETS), artifact / "triton", inputs=RenderInputs())
    server = subprocess.Popen([sys.executable, "-m", "specdeploy", "serve", str(artifact), "--openai-port", "0"],
                              env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                              preexec_fn=_as_a_terminal_would)
    state = artifact / ".specdeploy" / "serve.json"
    return server, state, int(wait_served(server, artifact)["pid"])


def wait_served(server: subprocess.Popen[bytes], artifact: Path) -> dict[str, object]:
    """The endpoint `serve` records once every model is loaded (the test fails if it dies or takes 300 s)."""
    state = artifact / ".specdeploy" / "serve.json"
    deadline = time.monotonic() + 300
    while not state.exists():
        if server.poll() is not None or time.monotonic() > deadline:
            server.kill()
            pytest.fail(f"serve did not come up: {server.communicate()[0].decode()[-2000:]}")
        time.sleep(0.3)
    return dict(json.loads(state.read_text()))


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return Path(f"/proc/{pid}/stat").exists() and Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"


def test_serve_ask_and_ctrl_c(tmp_path: Path, backends: Path) -> None:  # noqa: ARG001 - prepares the backend cache
    pytest.importorskip("torch")
    server, state, triton = serve(tmp_path / "art")
    try:
        asked = subprocess.run([sys.executable, "-m", "specdeploy", "--json", "ask", "What is 2 + 2?",
                                "--artifact", str(tmp_path / "art"), "--max-tokens", "8"],
                               capture_output=True, text=True, env=ENV, timeout=300)
        assert asked.returncode == 0, asked.stderr
        answer = json.loads(asked.stdout)
        local = generate("cpu-smollm2", "What is 2 + 2?", SETS, max_tokens=8)
        assert answer["output_ids"] == local.tokens and answer["text_output"] == local.text
        assert answer["draft_len"] == 2
        plain = subprocess.run([sys.executable, "-m", "specdeploy", "--json", "ask", "What is 2 + 2?",
                                "--artifact", str(tmp_path / "art"), "--max-tokens", "8", "--draft-len", "0"],
                               capture_output=True, text=True, env=ENV, timeout=300)
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
    server, state, triton = serve(tmp_path / "art")
    server.send_signal(signal.SIGTERM)
    output = server.communicate(timeout=60)[0].decode()
    assert server.returncode == 0, output
    assert "stopping tritonserver" in output and not state.exists() and gone(triton)
