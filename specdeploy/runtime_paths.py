"""Where things live on this machine: specdeploy's cache, optional executables (tritonserver from nvidia-pytriton),
the models shipped inside specdeploy."""

from __future__ import annotations

import importlib.util
import os
import tempfile
from pathlib import Path

from specdeploy.errors import UsageError


def cache_dir() -> Path:
    """specdeploy's cache ($SPECDEPLOY_CACHE, else ~/.cache/specdeploy), made on first use. One that cannot be made or
    written to is a usage error naming where it came from, before any work that would need it."""
    given = os.environ.get("SPECDEPLOY_CACHE")
    folder = Path(given or Path.home() / ".cache" / "specdeploy")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
    except OSError as exc:
        where = f"SPECDEPLOY_CACHE={given}" if given else f"{folder} (the default, under HOME)"
        why = "a file, not a folder" if folder.exists() and not folder.is_dir() else exc.strerror or exc
        raise UsageError(
            f"specdeploy's cache folder {where} is not usable: {why}", hint="set SPECDEPLOY_CACHE to a writable folder"
        ) from None
    return folder


def pytriton_root() -> Path | None:
    """The installed `pytriton` package folder, found without importing it."""
    spec = importlib.util.find_spec("pytriton")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def tritonserver_binary() -> Path | None:
    """tritonserver on PATH, else the one nvidia-pytriton bundles."""
    import shutil  # not at module level: `plan` imports this module for packaged_model

    on_path = shutil.which("tritonserver")
    if on_path:
        return Path(on_path)
    root = pytriton_root()
    candidate = root / "tritonserver" / "bin" / "tritonserver" if root else None
    return candidate if candidate and candidate.is_file() else None


def packaged_model(ref: str) -> Path | None:
    """`specdeploy/<name>` names a model shipped inside specdeploy (the reference runtime's drafters)."""
    prefix = "specdeploy/"
    if not ref.startswith(prefix) or "/" in ref[len(prefix) :]:
        return None
    folder = Path(__file__).resolve().parent / "engines" / "reference" / "runtime" / "drafters" / ref[len(prefix) :]
    return folder if (folder / "config.json").is_file() else None
