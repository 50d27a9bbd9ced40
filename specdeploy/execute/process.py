"""The one subprocess wrapper: argv lists only (never a shell), explicit env and cwd, a timeout, one log per step."""

from __future__ import annotations

import os
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
    elapsed seconds every HEARTBEAT_S while the child runs (trtllm-build takes many minutes).
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
            proc.kill()
            proc.wait()
            handle.write(f"\n# killed after the {timeout} s timeout\n".encode())
            handle.flush()
            raise StepFailed(
                f"{label}: timed out after {timeout} s: {' '.join(args)}\n{log_tail(log)}", hint=f"full log: {log}"
            ) from None
        except BaseException:
            proc.kill()  # Ctrl-C: never leave the child running
            proc.wait()
            raise
    duration = time.monotonic() - start
    if code != 0:
        raise StepFailed(
            f"{label}: exit code {code}: {' '.join(args)}\n--- last lines of {log} ---\n{log_tail(log)}",
            hint=f"full log: {log}",
        )
    return ProcessResult(tuple(args), code, duration, log)
