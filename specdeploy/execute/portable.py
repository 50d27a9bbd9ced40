"""Paths in the deployable files are relative to the artifact folder (or name a documented variable the serving
host sets), so the folder can be diffed in CI and moved to the serving host. A shipped profile is named, not
located: its file lives inside the installed package."""

from __future__ import annotations

import os
from pathlib import Path

from specdeploy.resolve.resolver import Resolved


def relative(path: str | Path, base: Path) -> str:
    """`path` as seen from `base` (`../profiles/x.yaml`), POSIX separators."""
    return Path(os.path.relpath(Path(path).resolve(), base.resolve())).as_posix()


def profile_ref(resolved: Resolved, artifact_dir: Path) -> str:
    """How a reproduce command names the profile: the shipped name, else the file relative to the artifact."""
    from specdeploy.profile.shipped import find_shipped

    file = resolved.loaded.file
    if not file:
        return resolved.loaded.name
    shipped = find_shipped(resolved.loaded.name)
    if shipped is not None and shipped.resolve() == Path(file).resolve():
        return resolved.loaded.name
    return relative(file, artifact_dir)
