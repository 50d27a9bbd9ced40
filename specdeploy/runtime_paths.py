"""Where optional executables live when they are installed (tritonserver from nvidia-pytriton)."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path


def pytriton_root() -> Path | None:
    """The installed `pytriton` package folder, found without importing it."""
    spec = importlib.util.find_spec("pytriton")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def tritonserver_binary() -> Path | None:
    """tritonserver on PATH, else the one nvidia-pytriton bundles."""
    on_path = shutil.which("tritonserver")
    if on_path:
        return Path(on_path)
    root = pytriton_root()
    candidate = root / "tritonserver" / "bin" / "tritonserver" if root else None
    return candidate if candidate and candidate.is_file() else None
