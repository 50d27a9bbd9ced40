"""The one subprocess wrapper: argv lists only (never a shell), an explicit environment, always a timeout or a stop.

Three ways a program runs: a build step (`run_process`: one log per step, StepFailed with the log's tail), a
short question whose output is the answer (`ask`: a version query, a checker, a probe), and a server that
outlives the call (`spawn_group` and `stop_group`: its own process group, gone when specdeploy dies).
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from specdeploy.errors import StepFailed

TAIL_LINES = 30


@dataclass(frozen=True)
class ProcessResult:
    argv: tuple[str, ...]
    returncode: int
    duration_s: float
    log_path: Path


def log_tail(log_path: Path, lines: int = TAIL_LINES) -> str:
    """The last lines of a log (what a failure message shows)."""
    try:
        with log_path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 16384))
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment plus `extra`: what most steps pass as their explicit `env`."""
    env = dict(os.environ)
    env.update(extra or {})
    return env


HEARTBEAT_S = 60.0
"""How often a running child is reported (`still running, 3 min 00 s`) to `heartbeat`."""


def _wait(
    proc: subprocess.Popen[bytes], timeout: float | None, heartbeat: Callable[[float], None] | None, start: float
) -> int:
    """proc.wait(timeout) (TimeoutExpired past it), calling heartbeat(elapsed s) every HEARTBEAT_S meanwhile."""
    deadline = None if timeout is None else start + timeout
    while True:
        chunk = HEARTBEAT_S if heartbeat else None
        if deadline is not None:
            left = deadline - time.monotonic()
            chunk = left if chunk is None else min(chunk, left)
        try:
            return proc.wait(timeout=None if chunk is None else max(0.0, chunk))
        except subprocess.TimeoutExpired:
            if deadline is not None and time.monotonic() >= deadline:
                raise
            if heartbeat:
                heartbeat(time.monotonic() - start)


def run_process(
    argv: Sequence[str],
    *,
    log_path: str | os.PathLike[str],
    env: Mapping[str, str],
    cwd: str | os.PathLike[str],
    timeout: float | None,
    step_id: str = "",
    heartbeat: Callable[[float], None] | None = None,
) -> ProcessResult:
    """Run argv, appending stdout+stderr to `log_path`; raise StepFailed (with the log's tail) unless it exits 0.

    The environment is never logged (it may hold HF_TOKEN); only the argv and cwd are. `heartbeat` hears the
    elapsed seconds every HEARTBEAT_S while the child runs (trtllm-build takes many minutes). The step runs in a
    process group of its own, which a timeout or an interrupt (Ctrl-C) kills whole: an engine's workers with it.
    """
    args = [str(a) for a in argv]
    if not args:
        raise ValueError("run_process needs a non-empty argv")
    log = Path(log_path)
    log.parent.mkdir(parents=True, exist_ok=True)
    label = step_id or Path(args[0]).name
    start = time.monotonic()
    with log.open("ab") as handle:
        handle.write(f"$ {' '.join(args)}\n# cwd: {cwd}\n".encode())
        handle.flush()
        try:
            proc = subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=handle,
                stderr=subprocess.STDOUT,
                env=dict(env),
                cwd=str(cwd),
                start_new_session=True,  # its workers (an engine's processes) are stopped with it
                preexec_fn=_die_with(os.getpid()),
                shell=False,
            )
        except OSError as exc:  # FileNotFoundError, PermissionError: the tool is not there
            handle.write(f"# could not start: {exc}\n".encode())
            raise StepFailed(
                f"{label}: cannot run {args[0]!r}: {exc.strerror or exc}",
                hint=f"is {args[0]} installed and on PATH? log: {log}",
            ) from exc
        try:
            code = _wait(proc, timeout, heartbeat, start)
        except subprocess.TimeoutExpired:
            _signal_group(proc.pid, signal.SIGKILL)
            proc.wait()
            handle.write(f"\n# killed after the {timeout} s timeout\n".encode())
            handle.flush()
            raise StepFailed(
                f"{label}: timed out after {timeout} s: {' '.join(args)}\n{log_tail(log)}", hint=f"full log: {log}"
            ) from None
        except BaseException:
            _signal_group(proc.pid, signal.SIGKILL)  # Ctrl-C: never leave the step or its workers running
            proc.wait()
            raise
    duration = time.monotonic() - start
    if code != 0:
        raise StepFailed(
            f"{label}: exit code {code}: {' '.join(args)}\n--- last lines of {log} ---\n{log_tail(log)}",
            hint=f"full log: {log}",
        )
    return ProcessResult(tuple(args), code, duration, log)


@dataclass(frozen=True)
class Answer:
    """What a short child said: its exit code and its whole output."""

    returncode: int
    stdout: str
    stderr: str


class NoAnswer(Exception):
    """The child could not be started or did not finish in time; each caller says what that means for its user."""


def ask(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    timeout: float,
    stdin: str | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> Answer:
    """Run a short child to its end with `stdin` as its input (none: /dev/null) and its output captured as text.
    It runs in a process group of its own, which a timeout or an interrupt kills whole (an import that hangs may
    have started workers), and the end of what it wrote comes with the NoAnswer."""
    args = [str(a) for a in argv]
    try:
        child = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(env),
            cwd=None if cwd is None else str(cwd),
            start_new_session=True,
            preexec_fn=_die_with(os.getpid()),
            shell=False,
        )
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename and str(exc.filename) != args[0] else ""
        raise NoAnswer(f"cannot run {args[0]}: {exc.strerror or exc}{where}") from None
    try:
        out, err = child.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        _signal_group(child.pid, signal.SIGKILL)
        out, err = child.communicate()
        tail = " | ".join((err or out or "").strip().splitlines()[-3:])
        late = f"{Path(args[0]).name} did not answer within {timeout:g} s"
        raise NoAnswer(late + (f": {tail}" if tail else "")) from None
    except BaseException:
        _signal_group(child.pid, signal.SIGKILL)
        child.wait()
        raise
    return Answer(child.returncode, out, err)


PR_SET_DEATHSIG = 1  # linux/prctl.h


def _die_with(parent: int) -> Callable[[], None] | None:
    """A preexec hook: SIGTERM this child when `parent` dies (Linux prctl; elsewhere None: no hook), and exit at once
    when the parent is already gone (it died between fork and prctl). libc is looked up here, in the parent:
    the child only makes the call."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None

    def arm() -> None:
        prctl(PR_SET_DEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)

    return arm


def spawn_group(
    argv: Sequence[str], *, env: Mapping[str, str], log_path: Path, fresh_log: bool = False
) -> subprocess.Popen[bytes]:
    """Start a server in a session of its own, its output appended to `log_path` (`fresh_log`: the log holds this
    run alone, for a caller that reads it back): a terminal's Ctrl-C reaches only specdeploy, which stops it in order
    (`stop_group`), and a parent-death signal ends it when specdeploy is killed outright (SIGKILL, OOM). OSError when
    it cannot start."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("wb" if fresh_log else "ab") as log:
        return subprocess.Popen(
            [str(a) for a in argv],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=dict(env),
            start_new_session=True,
            preexec_fn=_die_with(os.getpid()),
            shell=False,
        )


def exited(process: subprocess.Popen[bytes]) -> int | None:
    """The exit code of a `spawn_group` leader that has ended, else None, without reaping it: until `stop_group`
    reaps it its pid, and so its group's id, cannot be given to another process that `stop_group` would signal."""
    if process.returncode is not None:
        return process.returncode
    if not hasattr(os, "waitid"):  # not Linux: Popen.poll reaps
        return process.poll()
    try:
        info = os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return process.poll()
    if info is None:
        return None
    return -info.si_status if info.si_code in (os.CLD_KILLED, os.CLD_DUMPED) else info.si_status


def stop_group(process: subprocess.Popen[bytes], grace_s: float) -> int | None:
    """SIGTERM to the process group `spawn_group` started, then, once the leader has ended or after `grace_s`,
    SIGKILL to the whole group (workers that outlived their leader), and the leader reaped. Its exit code (None if
    even SIGKILL did not end it within `grace_s`). A leader reaped earlier is left alone: its group id may be
    another process's by now. Callers learn of an exit through `exited`, which does not reap."""
    if process.returncode is not None:
        return process.returncode
    _signal_group(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while exited(process) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    _signal_group(process.pid, signal.SIGKILL)  # the leader, alive or not yet reaped, holds the group's id
    try:
        return process.wait(grace_s)
    except subprocess.TimeoutExpired:
        return None


def _signal_group(pid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
