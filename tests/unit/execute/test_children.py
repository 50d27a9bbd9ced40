"""The wrapper's other two ways to run a program: `ask` (a short question) and `spawn_group`/`stop_group` (a
server), with real child processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from specdeploy.execute.process import NoAnswer, ask, child_env, exited, spawn_group, stop_group
from tests.helpers import wait_gone


def logged(log: Path, word: str) -> str:
    """The log once `word` is in it (30 s at most): the spawned child has got that far."""
    deadline = time.monotonic() + 30
    while word not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.1)
    return log.read_text()


def test_ask_returns_exit_code_and_both_outputs_and_reads_stdin() -> None:
    code = "import sys; data = sys.stdin.read(); print(data.upper()); print('warn', file=sys.stderr); sys.exit(3)"
    answer = ask([sys.executable, "-c", code], stdin="hello", env=child_env(), timeout=30)
    assert (answer.returncode, answer.stdout.strip(), answer.stderr.strip()) == (3, "HELLO", "warn")


def test_ask_without_stdin_gives_the_child_an_empty_one() -> None:
    answer = ask([sys.executable, "-c", "import sys; print(repr(sys.stdin.read()))"], env=child_env(), timeout=30)
    assert answer.stdout.strip() == "''"


def test_ask_passes_only_the_given_environment() -> None:
    env = {**child_env(), "SPECDEPLOY_PROBE": "yes"}
    env.pop("HOME", None)
    code = "import os; print(os.environ.get('SPECDEPLOY_PROBE'), os.environ.get('HOME'))"
    assert ask([sys.executable, "-c", code], env=env, timeout=30).stdout.split() == ["yes", "None"]


def test_a_child_past_its_timeout_is_no_answer() -> None:
    with pytest.raises(NoAnswer, match="did not answer within 0.5 s"):
        ask([sys.executable, "-c", "import time; time.sleep(30)"], env=child_env(), timeout=0.5)


HANGS = """
import subprocess, sys, time
worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
print("worker", worker.pid, flush=True)
print("importing the engine ...", file=sys.stderr, flush=True)
time.sleep(120)
"""


def test_a_timeout_kills_what_the_child_started_and_says_what_it_wrote() -> None:
    with pytest.raises(NoAnswer) as refused:
        ask([sys.executable, "-c", HANGS], env=child_env(), timeout=3)
    assert "did not answer within 3 s: importing the engine ..." in str(refused.value)


def test_a_missing_program_is_no_answer(tmp_path: Path) -> None:
    with pytest.raises(NoAnswer, match="cannot run .*no-such-tool"):
        ask([str(tmp_path / "no-such-tool")], env=child_env(), timeout=5)


def test_ask_runs_no_shell(tmp_path: Path) -> None:
    answer = ask(
        [sys.executable, "-c", "import sys; print(sys.argv[1])", "$(touch x); echo hi"],
        env=child_env(),
        timeout=30,
        cwd=tmp_path,
    )
    assert answer.stdout.strip() == "$(touch x); echo hi" and not (tmp_path / "x").exists()


GROUP_LEADER = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
print("leader up, child", child.pid, flush=True)
time.sleep(120)
"""


def test_a_spawned_server_leads_its_own_group_and_logs_by_appending(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "server.log"
    log.parent.mkdir()
    log.write_text("earlier run\n")
    process = spawn_group([sys.executable, "-c", GROUP_LEADER], env=child_env(), log_path=log)
    try:
        assert os.getpgid(process.pid) == process.pid != os.getpgrp()
        text = logged(log, "leader up")
        assert text.startswith("earlier run\n") and "leader up" in text
    finally:
        stop_group(process, grace_s=5)


def test_stop_group_ends_the_leader_and_what_it_started(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    process = spawn_group([sys.executable, "-c", GROUP_LEADER], env=child_env(), log_path=log)
    child = int(logged(log, "child").split("child")[1].split()[0])
    code = stop_group(process, grace_s=5)
    assert code == -signal.SIGTERM
    assert wait_gone(child), "the leader's child outlived stop_group"


STUBBORN_WORKER = """
import signal, subprocess, sys, time
code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('w', flush=True); time.sleep(120)"
worker = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
worker.stdout.readline()
print("worker", worker.pid, flush=True)
time.sleep(120)
"""


def test_workers_that_outlive_their_leader_are_killed(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    process = spawn_group([sys.executable, "-c", STUBBORN_WORKER], env=child_env(), log_path=log)
    worker = int(logged(log, "worker").split("worker")[1].split()[0])
    assert stop_group(process, grace_s=5) == -signal.SIGTERM  # the leader ended at SIGTERM, its worker did not
    assert wait_gone(worker), "a worker that ignores SIGTERM outlived stop_group"


def test_an_exit_is_seen_without_reaping_until_stop_group(tmp_path: Path) -> None:
    process = spawn_group([sys.executable, "-c", "raise SystemExit(7)"], env=child_env(), log_path=tmp_path / "l")
    deadline = time.monotonic() + 30
    while exited(process) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert exited(process) == 7 and process.returncode is None
    assert Path(f"/proc/{process.pid}").exists(), "reaped: its pid and group id could be reused"
    assert stop_group(process, grace_s=5) == 7 and not Path(f"/proc/{process.pid}").exists()


def test_a_leader_reaped_elsewhere_is_not_signalled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    process = spawn_group([sys.executable, "-c", "pass"], env=child_env(), log_path=tmp_path / "l")
    process.wait()
    sent: list[tuple[int, int]] = []
    monkeypatch.setattr(os, "killpg", lambda pid, sig: sent.append((pid, sig)))
    assert stop_group(process, grace_s=1) == 0 and sent == []


def test_a_fresh_log_holds_this_run_alone(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("an earlier run failed to load 'm'\n")
    process = spawn_group([sys.executable, "-c", "print('this run')"], env=child_env(), log_path=log, fresh_log=True)
    assert process.wait(30) == 0
    assert log.read_text() == "this run\n"


def test_stop_group_kills_a_leader_that_ignores_sigterm(tmp_path: Path) -> None:
    stubborn = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(120)"
    )
    log = tmp_path / "server.log"
    process = spawn_group([sys.executable, "-c", stubborn], env=child_env(), log_path=log)
    logged(log, "up")
    assert stop_group(process, grace_s=0.5) == -signal.SIGKILL


SPAWNER = """
import sys, time
from pathlib import Path
from specdeploy.execute.process import child_env, spawn_group
sleeper = [sys.executable, "-c", "import time; time.sleep(120)"]
server = spawn_group(sleeper, env=child_env(), log_path=Path(sys.argv[1]))
print(server.pid, flush=True)
time.sleep(120)
"""


def test_a_spawned_server_dies_with_specdeploy(tmp_path: Path) -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", SPAWNER, str(tmp_path / "server.log")], stdout=subprocess.PIPE, text=True
    )
    assert parent.stdout is not None
    server = int(parent.stdout.readline())
    parent.kill()  # SIGKILL: no handler of specdeploy's runs
    parent.wait()
    assert wait_gone(server), "the server outlived a SIGKILLed parent"
