"""Render a context into a repository: into a temp folder next to the target, check it, then swap it in.

An existing repository is never half-overwritten: either the old tree or the new, checked one is there.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import ClassVar

from specdeploy._resources import data_dir
from specdeploy.boundedio import walk
from specdeploy.errors import StepFailed, UsageError
from specdeploy.render.check import check_repo
from specdeploy.render.check_pbtxt import RepoIssue
from specdeploy.render.context import MANIFEST, VERSION, triton_layout
from specdeploy.render.env import render_template
from specdeploy.render.model import RepoContext

_RENAME_EXCHANGE = 2


@dataclass
class RenderReport:
    """Per-file status (`create`, `identical`, `changed`, `delete`) and the check's findings."""

    schema_version: ClassVar[int] = 1
    out: Path
    layout: str
    files: dict[str, str] = field(default_factory=dict)
    issues: list[RepoIssue] = field(default_factory=list)
    pretend: bool = False
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return {
            "schema_version": self.schema_version,
            "out": str(self.out),
            "layout": self.layout,
            "pretend": self.pretend,
            "files": self.files,
            "issues": [i.to_dict() for i in self.issues],
            "warnings": self.warnings,
        }


def render_files(context: RepoContext) -> dict[str, bytes]:
    """Relative path -> content: `*.j2` rendered with the strict env, other files copied as they are."""
    folder = triton_layout(context.layout).template_folder
    base = data_dir("templates") / folder
    manifest = replace(context.manifest, models=tuple(sorted(context.folders.values())))
    files: dict[str, bytes] = {MANIFEST: manifest.to_json().encode()}
    for template_folder, model_folder in context.folders.items():
        for path in sorted((base / template_folder).rglob("*")):
            rel = path.relative_to(base / template_folder)
            if not path.is_file() or any(part.startswith(("_", ".")) or part == "__pycache__" for part in rel.parts):
                continue
            if path.suffix == ".j2":
                name = f"{folder}/{template_folder}/{rel.as_posix()}"
                files[f"{model_folder}/{rel.with_suffix('').as_posix()}"] = render_template(name, context).encode()
            else:
                files[f"{model_folder}/{rel.as_posix()}"] = path.read_bytes()
        files.setdefault(f"{model_folder}/{VERSION}/", b"")
    return files


def _safe_rel(rel: str) -> PurePosixPath:
    path = PurePosixPath(rel)
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise UsageError(f"refusing to write {rel!r}: outside the repository folder")
    return path


def _write_tree(root: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        path = root / _safe_rel(rel)
        if rel.endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def _statuses(out: Path, files: dict[str, bytes]) -> dict[str, str]:
    status = {}
    for rel, data in files.items():
        if rel.endswith("/"):
            continue
        old = out / rel
        status[rel] = "create" if not old.is_file() else "identical" if old.read_bytes() == data else "changed"
    if out.is_dir():
        for old in sorted(p for p in walk(out) if p.is_file()):
            rel = old.relative_to(out).as_posix()
            if rel not in status:
                status[rel] = "delete"
    return status


def _guard(out: Path) -> None:
    if out.is_symlink():
        raise UsageError(f"refusing to render into {out}: it is a symbolic link")
    if out.exists() and not out.is_dir():
        raise UsageError(f"refusing to render into {out}: it is not a folder")
    if out.is_dir() and any(out.iterdir()) and not (out / MANIFEST).is_file():
        raise UsageError(
            f"refusing to replace {out}: it is not empty and not a repository specdeploy rendered",
            hint="choose an empty or new folder",
        )
    links = [p for p in walk(out) if p.is_symlink()] if out.is_dir() else []
    if links:
        raise UsageError(f"refusing to replace {out}: it contains a symbolic link ({links[0]})")


def _swap(new: Path, out: Path) -> None:
    """Exchange two folders atomically (renameat2 RENAME_EXCHANGE); fall back to two renames."""
    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    at_fdcwd = -100
    if (
        renameat2 is not None
        and renameat2(at_fdcwd, os.fsencode(new), at_fdcwd, os.fsencode(out), _RENAME_EXCHANGE) == 0
    ):
        shutil.rmtree(new)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
    old.rmdir()
    os.rename(out, old)
    try:
        os.rename(new, out)
    except OSError:
        os.rename(old, out)
        raise
    shutil.rmtree(old)


def write_repo(context: RepoContext, out: Path, *, pretend: bool = False, compare: Path | None = None) -> RenderReport:
    """Render, check (errors raise StepFailed, nothing replaced), then swap into `out` unless pretending. The
    statuses are against `compare` (default `out`): the build stages into an empty folder that replaces another."""
    out = Path(out).absolute()
    _guard(out)
    files = render_files(context)
    try:
        if not pretend:  # staged next to `out` for an atomic swap; a pretend run leaves no folder behind
            out.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.new-", dir=None if pretend else out.parent))
    except OSError as exc:
        raise UsageError(
            f"cannot write the repository at {out}: {exc.strerror or exc}",
            hint="--out must be a folder in a writable place (not under a file, not read-only)",
        ) from None
    try:
        _write_tree(staging, files)
        report = RenderReport(out, context.layout, _statuses(compare or out, files), check_repo(staging), pretend)
        if report.issues:
            lines = "\n".join(f"  {i.render()}" for i in report.issues)
            raise StepFailed(f"the rendered repository fails its checks; {out} left unchanged:\n{lines}")
        if not pretend:
            staging.chmod(0o755)
            if out.is_dir():
                _swap(staging, out)
            else:
                os.rename(staging, out)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    return report
