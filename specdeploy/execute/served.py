"""Who serves an artifact folder now: the record `specdeploy serve` keeps in `.specdeploy/serve.json` while it
holds `.specdeploy/serve.lock`. Read here (below the serve layer) because a build or a tune must not write into a
folder that is being served."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from specdeploy.boundedio import read_json

STATE = Path(".specdeploy") / "serve.json"


def served_by(owner: Path) -> dict[str, object] | None:
    """What serves `owner` now: its record ({} while it loads), or None when no `serve` holds its lock."""
    try:
        fd = os.open(owner / STATE.with_name("serve.lock"), os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return recorded(owner) or {}
    finally:
        os.close(fd)
    return None


def alive(pid: object, process: object = "tritonserver") -> bool:
    """Whether `pid` is a running (not zombie) process whose command line holds `process` (the server the record
    names: tritonserver, or the fragment an engine's own server recorded)."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0 or not isinstance(process, str) or not process:
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z" and process.encode() in cmdline


def recorded(owner: Path) -> dict[str, object] | None:
    """The live endpoint recorded under `owner` (tritonserver's gRPC, or an engine's own OpenAI server); a stale
    or garbage record is removed (None)."""
    state = owner / STATE
    try:
        data = read_json(state)
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        data = None
    if (
        isinstance(data, dict)
        and alive(data.get("pid"), data.get("process", "tritonserver"))
        and any(isinstance(data.get(k), str) for k in ("grpc", "openai"))
        and isinstance(data.get("models"), list)
        and data["models"]
    ):
        return data
    try:
        state.unlink(missing_ok=True)
    except OSError:
        pass
    return None
