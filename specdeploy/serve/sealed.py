"""What `serve` hands tritonserver: a private copy of the repository's verified files, never the repository.

A built artifact must pass `verify` first (the same gate: a planted version folder, module or `.pyc` is unlisted
drift, a changed file is a hash mismatch); each file is copied from the manifest's list and hashed as it is read,
so a file swapped after the gate is refused too. A repository that is not a built artifact (`render`'s output)
has no hashes: it must hold nothing render would not write (render/planted.py) and is served with a note.

The copy is what the python stub imports, and where it writes its bytecode: the stub's embedded Python is
isolated (python_backend src/pb_stub.cc @ r24.10) and ignores PYTHONDONTWRITEBYTECODE and PYTHONPYCACHEPREFIX,
so serving the repository in place wrote `__pycache__/*.pyc` into the artifact, and ran a planted one.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from specdeploy.errors import StepFailed
from specdeploy.render.context import MANIFEST, VERSION

MANIFEST_NAME = "manifest.json"  # a built artifact's (execute/manifest.py MANIFEST)


def artifact_of(root: Path) -> Path | None:
    """The built artifact holding repository `root` (its `triton/`), if any: one whose manifest is missing or
    not a file is still one (verify refuses it), never a bare repository."""
    owner = root.parent
    marks = (owner / MANIFEST_NAME, owner / "specdeploy.lock")
    return owner if root.name == "triton" and any(os.path.lexists(m) for m in marks) else None


def gate(root: Path, models: tuple[str, ...], report: Callable[[str], None]) -> dict[str, str | None]:
    """The files to serve, relative to `root` -> sha256 (None: no build recorded one); raises when the artifact
    fails `verify` or a bare repository holds what render never writes."""
    artifact = artifact_of(root)
    if artifact is None:
        return _bare(root, models, report)
    prefix = f"{root.name}/"
    files = verified(artifact)["files"]
    return {rel[len(prefix) :]: digest for rel, digest in files.items() if rel.startswith(prefix)}


def verified(artifact: Path) -> dict[str, Any]:
    """A built artifact's manifest (`files`: every file, relative to the artifact -> sha256) once the artifact
    passes `verify`; raises when it fails (or its manifest changes while verify reads it)."""
    from specdeploy.execute.verify import drift_line, verify

    path = artifact / MANIFEST_NAME
    manifest = path.read_bytes() if path.is_file() else b""  # a FIFO is never opened: verify refuses it
    result = verify(artifact)
    if not result.ok:
        lines = [f"  drift: {drift_line(d)}" for d in result.drift] + [f"  problem: {p}" for p in result.problems]
        raise StepFailed(
            f"{artifact} fails `specdeploy verify`; serve runs only what verify passes:\n"
            + "\n".join(lines[:20])
            + (f"\n  ... {len(lines) - 20} more" if len(lines) > 20 else ""),
            hint="rebuild it (`specdeploy build`), or serve a clean copy",
        )
    if (artifact / MANIFEST_NAME).read_bytes() != manifest:
        raise StepFailed(
            f"{artifact / MANIFEST_NAME} changed while `verify` read it: not served",
            hint="something is writing into the artifact; serve a copy nobody else writes",
        )
    return dict(json.loads(manifest))


def _bare(root: Path, models: tuple[str, ...], report: Callable[[str], None]) -> dict[str, str | None]:
    from specdeploy.render.planted import planted

    issues = planted(root, list(models))
    if issues:
        raise StepFailed(
            f"{root} holds what render never writes; serve loads none of it:\n"
            + "\n".join(f"  {i.render()}" for i in issues[:20]),
            hint="render it again into a new folder, or `specdeploy check-repo` it",
        )
    report(f"note: {root} is not a built artifact (no ../{MANIFEST_NAME}): no hashes to verify its files against")
    files: dict[str, str | None] = {MANIFEST: None}
    for model in models:
        for path in sorted((root / model).rglob("*")):
            if path.is_file():
                files[path.relative_to(root).as_posix()] = None
    return files


def seal(root: Path, files: dict[str, str | None], dest: Path) -> Path:
    """Copy `files` from `root` into a fresh `dest` (owner-only), each hashed against its record as read, and
    give each model its version folder (an ensemble's is empty). Returns `dest`."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True, mode=0o700)
    for rel, digest in sorted(files.items()):
        source = root / rel
        try:
            fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW)
            with os.fdopen(fd, "rb") as handle:
                data = handle.read()
        except OSError as exc:
            raise StepFailed(f"cannot read {source} to serve it: {exc.strerror or exc}") from None
        if digest is not None and hashlib.sha256(data).hexdigest() != digest:
            raise StepFailed(
                f"{source} changed after `verify` passed it: not served",
                hint="something is writing into the artifact; serve a copy nobody else writes",
            )
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    for config in dest.glob("*/config.pbtxt"):  # the version folder render writes, empty for an ensemble
        (config.parent / VERSION).mkdir(exist_ok=True)
    return dest
