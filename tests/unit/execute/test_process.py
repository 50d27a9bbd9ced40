"""run_process: argv only, a log per step, the log's tail in StepFailed, timeouts, missing tools."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from specdeploy.errors import StepFailed
from specdeploy.execute.process import child_env, run_process
from tests.helpers import wait_gone


def test_success_logs_output_not_env(tmp_path: Path) -> None:
    log = tmp_path / "s.log"
    env = child_env({"SECRET_TOKEN": "hf_do_not_print"})
    result = run_process(
        [sys.executable, "-c", "print('hello'); import sys; print('err', file=sys.stderr)"],
        log_path=log,
        env=env,
        cwd=tmp_path,
        timeout=30,
    )
    text = log.read_text()
    assert result.returncode == 0 and "hello" in text and "err" in text
    assert "hf_do_not_print" not in text


def test_failure_carries_the_tail(tmp_path: Path) -> None:
    code = "import sys\nfor i in range(100): print('line', i)\nsys.exit(3)"
    with pytest.raises(StepFailed) as err:
        run_process(
            [sys.executable, "-c", code],
            log_path=tmp_path / "f.log",
            env=dict(os.environ),
            cwd=tmp_path,
            timeout=30,
            step_id="engine.target",
        )
    message = str(err.value)
    assert "exit code 3" in message and "line 99" in message and "line 10\n" not in message
    assert "engine.target" in message


def test_timeout_kills(tmp_path: Path) -> None:
    with pytest.raises(StepFailed) as err:
        run_process(
            [sys.executable, "-c", "import time; time.sleep(30)"],
            log_path=tmp_path / "t.log",
            env=dict(os.environ),
            cwd=tmp_path,
            timeout=0.5,
        )
    assert "timed out" in str(err.value)


def test_a_step_stopped_early_takes_its_workers_with_it(tmp_path: Path) -> None:
    step = (
        "import subprocess, sys, time\n"
        "w = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "print('worker', w.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    log = tmp_path / "t.log"
    with pytest.raises(StepFailed, match="timed out"):
        run_process([sys.executable, "-c", step], log_path=log, env=dict(os.environ), cwd=tmp_path, timeout=3)
    worker = int(next(line.split()[1] for line in log.read_text().splitlines() if line.startswith("worker ")))
    assert wait_gone(worker, 10), "the step's worker outlived its timeout"


def test_missing_executable(tmp_path: Path) -> None:
    with pytest.raises(StepFailed) as err:
        run_process(
            ["trtllm-build-does-not-exist", "--help"],
            log_path=tmp_path / "m.log",
            env=dict(os.environ),
            cwd=tmp_path,
            timeout=5,
        )
    assert "cannot run 'trtllm-build-does-not-exist'" in str(err.value)


def test_no_shell(tmp_path: Path) -> None:
    run_process(
        [sys.executable, "-c", "import sys; print(sys.argv[1])", "$(echo pwned); ls"],
        log_path=tmp_path / "n.log",
        env=dict(os.environ),
        cwd=tmp_path,
        timeout=30,
    )
    assert "$(echo pwned); ls" in (tmp_path / "n.log").read_text()
