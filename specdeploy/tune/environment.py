"""Where and with what a tune ran, recorded in its result so a figure can be traced and compared: date, host,
OS, CPU, GPUs and driver, the engine the profile targets, the versions of the packages that measure, and
specdeploy's own version and commit."""

from __future__ import annotations

import json
import os
import platform
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from typing import Any

from specdeploy.execute.process import NoAnswer, ask, child_env

PACKAGES = ("torch", "transformers", "tensorrt_llm", "vllm", "numpy", "nvidia-ml-py")
"""The installed packages whose version can move a figure (those absent here are left out)."""


def environment(engine: str, release: str | None) -> dict[str, Any]:
    """This machine and this specdeploy, now. `engine`/`release`: the profile's runtime and the release of it the
    profile targets (None for the CPU reference runtime, which is specdeploy's own)."""
    from specdeploy import __version__
    from specdeploy.resolve.probe import probe_nvml

    names, memory, driver, error = probe_nvml()
    return {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "host": platform.node(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "cpu": cpu_model(),
        "gpus": [{"name": n, "memory_gib": round(m / 1024**3, 1)} for n, m in zip(names, memory, strict=True)],
        "driver": driver or error,
        "engine": {"name": engine, "release": release},
        "packages": {name: v for name in PACKAGES if (v := _version(name))},
        "specdeploy": {"version": __version__, "commit": commit()},
    }


def cpu_model() -> str:
    """The CPU's model name (Linux: /proc/cpuinfo) and its logical cores."""
    name = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{name}, {os.cpu_count()} logical cores"


def _version(name: str) -> str | None:
    try:
        return distribution(name).version
    except PackageNotFoundError:
        return None


def commit() -> str | None:
    """The git commit specdeploy runs from: its checkout's HEAD (`-dirty` with uncommitted changes to tracked
    files), else the commit pip recorded for a VCS install (direct_url.json), else None (a release wheel)."""
    root = Path(__file__).resolve().parents[2]
    if (root / ".git").exists():
        try:
            head = ask(["git", "-C", str(root), "rev-parse", "HEAD"], env=child_env(), timeout=10)
            dirty = ask(
                ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"], env=child_env(), timeout=10
            )
        except NoAnswer:
            return None
        if head.returncode or dirty.returncode:
            return None
        return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    try:
        url = json.loads(distribution("specdeploy").read_text("direct_url.json") or "{}")
    except (PackageNotFoundError, ValueError):
        return None
    return (url.get("vcs_info") or {}).get("commit_id")
