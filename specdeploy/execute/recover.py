"""What a command killed while it held the artifact folder's lock leaves behind, set right by the next holder.

A folder `X` is replaced in two renames (`workdir._move`, `render.writer._swap`): `X -> .X.old-<id>`, then the new
tree `-> X`. Killed between them, `X` is missing and `.X.old-<id>` holds the tree the stamps still describe (the
killed step wrote no stamp), so the swap is rolled back; killed after the second, `.X.old-<id>` is garbage. The
renderer stages its tree as `.X.new-<id>`, and an atomic write (`_io.write_bytes_atomic`) as
`.NAME.<8 characters>.tmp`: neither was ever complete, both are removed.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from specdeploy.execute.workdir import CONTAINERS

_OLD = re.compile(r"^\.(?P<name>.+)\.old-[A-Za-z0-9_]+$")
_NEW = re.compile(r"^\.(?P<name>.+)\.new-[A-Za-z0-9_]+$")
_TMP = re.compile(r"^\..+\.[a-z0-9_]{8}\.tmp$")  # tempfile's names: 8 characters of [a-z0-9_]
TMP_FOLDERS = (".", ".specdeploy", ".specdeploy/steps", ".specdeploy/tune", "tune")
"""Where the tool writes atomically (the manifest, the lock, run.json, stamps, the hash cache, tune results)."""


def recover(artifact_dir: Path) -> list[str]:
    """Finish or roll back interrupted swaps and remove half-written temp files; one line per thing done."""
    done: list[str] = []
    for folder in (artifact_dir, *(artifact_dir / name for name in sorted(CONTAINERS))):
        if folder.is_dir() and not folder.is_symlink():
            done += _swaps(artifact_dir, folder)
    for name in TMP_FOLDERS:
        folder = artifact_dir / name
        if not folder.is_dir() or folder.is_symlink():
            continue
        for path in sorted(folder.iterdir()):
            if _TMP.match(path.name) and (path.is_file() or path.is_symlink()):
                path.unlink()
                done.append(f"removed {_rel(path, artifact_dir)} (an interrupted atomic write)")
    return done


def _swaps(artifact_dir: Path, folder: Path) -> list[str]:
    done = []
    entries = sorted(folder.iterdir(), key=lambda p: p.name)
    for entry in entries:
        old, new = _OLD.match(entry.name), _NEW.match(entry.name)
        if not (old or new) or not entry.is_dir() or entry.is_symlink():
            continue
        home = folder / (old or new)["name"]  # type: ignore[index]
        if old and not home.exists() and not home.is_symlink():
            entry.rename(home)
            done.append(f"rolled back an interrupted swap: {_rel(home, artifact_dir)} restored from {entry.name}")
        else:
            shutil.rmtree(entry)
            what = "the replaced" if old else "an unfinished new"
            done.append(
                f"removed {_rel(entry, artifact_dir)} ({what} {_rel(home, artifact_dir)} of an interrupted swap)"
            )
    return done


def _rel(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()
