"""`serve` under faults, with a real tritonserver and a tiny python model: two artifacts served side by side, a
second `serve` of the same artifact refused with where it is served, and
no tritonserver left behind after SIGHUP (a closed terminal) or SIGKILL of `serve`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.helpers import wait_gone
from tests.triton.helpers import ENV, echo_repo, infer, wait_served


def start(folder: Path) -> tuple[subprocess.Popen[bytes], dict[str, object]]:
    process = subprocess.Popen(
        [sys.executable, "-m", "specdeploy", "serve", str(folder), "--openai-port", "0"],
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    return process, wait_served(process, folder)


def test_two_serves_side_by_side_then_hup_and_kill(tmp_path: Path) -> None:

    a, b = echo_repo(tmp_path / "a", 1), echo_repo(tmp_path / "b", 100)
    serve_a, state_a = start(a)
    serve_b = None
    try:
        serve_b, state_b = start(b)
        assert infer(str(state_a["grpc"]), 1) == 2 and infer(str(state_b["grpc"]), 1) == 101
        assert state_a["models"] == ["echo"]

        again = subprocess.run(
            [sys.executable, "-m", "specdeploy", "serve", str(a), "--openai-port", "0"],
            env=ENV,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert again.returncode == 2, again.stderr
        assert "already served" in again.stderr and str(state_a["grpc"]) in again.stderr
        assert infer(str(state_a["grpc"]), 5) == 6  # the first server is unharmed

        serve_a.send_signal(signal.SIGHUP)
        assert serve_a.wait(60) == 0
        assert wait_gone(int(state_a["pid"])) and not (a / ".specdeploy" / "serve.json").exists()

        serve_b.kill()  # SIGKILL: no handler runs; tritonserver dies with its parent
        serve_b.wait(30)
        assert wait_gone(int(state_b["pid"])), "tritonserver outlived a SIGKILLed serve"
        asked = subprocess.run(
            [sys.executable, "-m", "specdeploy", "ask", "hi", "--artifact", str(b)],
            env=ENV,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert asked.returncode == 2 and "stale" in asked.stderr, asked.stderr
    finally:
        for process in (serve_a, serve_b):
            if process is not None and process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
