"""The artifact folder `OUT/<name>/`: a safe name, never outside OUT, and the one lock that every command
writing into it (build, tune) holds, so their outputs never mix."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from specdeploy.errors import SpecdeployError, UsageError
from specdeploy.execute.served import served_by
from specdeploy.profile.loader import check_name

LOCK_FILE = Path(".specdeploy") / "build.lock"
UNUSABLE = "--out must be a writable, readable folder (not a file, not a read-only mount)"
OURS = (".specdeploy", "manifest.json", "specdeploy.lock", "tune", "triton", "deploy")
"""Entries that mark a folder as an artifact folder (a committed one has no `.specdeploy/`, a tune-only one
only `tune/`, a render-only one `triton/` or `deploy/`)."""
NOT_CONTENT = frozenset({".gitignore", ".gitkeep", ".DS_Store"})
"""What an empty folder may hold (a checked-in placeholder, Finder's metadata)."""


class BuildLocked(SpecdeployError):
    """Another command holds this artifact folder's lock (exit 1)."""


def check_folder(out: Path, name: str) -> Path:
    """`out/name`, resolved, or the UsageError a build into it would meet; creates nothing (a build checks this
    before it asks the hub, which offline retries for ~23 s a model)."""
    problem = check_name(name)
    if problem:
        raise UsageError(problem, hint="rename the profile file")
    root = out.resolve()
    folder = (root / name).resolve()
    if folder.parent != root:
        raise UsageError(
            f"the artifact folder {folder} would be outside --out {root}",
            hint="rename the profile file, or pass --out a plain folder",
        )
    existing = next(p for p in (folder, *folder.parents) if p.exists())  # the folder, or where it would be made
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        what = "it" if existing == folder else str(existing)
        raise UsageError(
            f"cannot {'use' if existing == folder else 'create'} the artifact folder {folder}: {what} "
            f"is {'not a folder' if not existing.is_dir() else 'not writable'}",
            hint=UNUSABLE,
        )
    try:
        held = {p.name for p in folder.iterdir()} - NOT_CONTENT if existing == folder else set()
    except OSError as exc:
        raise UsageError(f"cannot read the artifact folder {folder}: {exc.strerror or exc}", hint=UNUSABLE) from None
    if held and not any((folder / n).exists() for n in OURS):
        raise UsageError(
            f"refusing to build into {folder}: it is not empty and not an artifact folder specdeploy wrote",
            hint="pass --out a folder of artifacts (the build writes OUT/<profile name>/), or move that folder away",
        )
    _not_served(folder)
    return folder


def _not_served(folder: Path) -> None:
    """A folder `specdeploy serve` serves keeps its files until that serve stops: a build or tune would change
    the artifact under the running server, and its manifest would describe another build than the one served."""
    served = served_by(folder)
    if served is not None:
        where = f"tritonserver pid {served['pid']}, grpc {served['grpc']}" if served else "still loading its models"
        raise UsageError(
            f"refusing to write into {folder}: `specdeploy serve` is serving it ({where})",
            hint="stop that serve first (Ctrl-C), or pass another --out",
        )


def artifact_folder(out: Path, name: str) -> Path:
    """`out/name`, checked (`check_folder`) and created (with its `.specdeploy/`)."""
    folder = check_folder(out, name)
    try:
        (folder / ".specdeploy").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create the artifact folder {folder}: {exc.strerror or exc}", hint=UNUSABLE) from None
    return folder


@contextmanager
def artifact_lock(
    folder: Path, name: str, *, timeout: float | None = None, report: Callable[[str], None] = lambda _: None
) -> Iterator[None]:
    """Hold `folder`'s lock; `timeout` None waits as long as the other command runs. The holder first sets right
    what a killed holder left (`recover`)."""
    from filelock import FileLock, Timeout

    from specdeploy.execute.recover import recover

    lock = FileLock(str(folder / LOCK_FILE))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        report(
            f"waiting for another build of {name} to finish (lock {lock.lock_file})"
            + (f", up to {timeout:g} s" if timeout is not None else "")
        )
        try:
            lock.acquire(timeout=-1 if timeout is None else timeout)
        except Timeout:
            raise BuildLocked(
                f"another build of {name} still holds {lock.lock_file} after {timeout:g} s",
                hint="wait for it, or raise --lock-timeout",
            ) from None
    except OSError as exc:
        raise UsageError(
            f"cannot lock {lock.lock_file}: {exc.strerror or exc}", hint="the artifact folder must be writable"
        ) from None
    try:
        for line in recover(folder):
            report(f"recovered: {line}")
        yield
    finally:
        lock.release()
