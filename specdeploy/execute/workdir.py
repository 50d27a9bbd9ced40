"""Staging and swapping of step outputs, and the `${...}` placeholders of argv steps.

Argv placeholders are filled at run time (the plan stays pure and printable): `${out}` (the step's
output folder), `${python}`, `${trtllm_examples}` (TRT-LLM's examples folder; env
SPECDEPLOY_TRTLLM_EXAMPLES, else the NGC image's /app/tensorrt_llm/examples) and `${<step>.<key>}`
(an earlier step's output; `dir` outputs are relative to the artifact folder).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from specdeploy.boundedio import walk
from specdeploy.errors import StepFailed
from specdeploy.execute.hashing import HashCache

PLACEHOLDER = re.compile(r"\$\{([A-Za-z0-9_.\-]+)\}")
CONTAINERS = frozenset({"engines", "checkpoints"})
"""Top-level folders shared by several steps: merged entry by entry instead of replaced whole."""
DEFAULT_EXAMPLES = "/app/tensorrt_llm/examples"


def resolve_argv(
    argv: Sequence[str], *, out: Path, artifact_dir: Path, outputs: dict[str, dict[str, Any]]
) -> list[str]:
    fixed = {
        "out": str(out),
        "python": sys.executable,
        "trtllm_examples": os.environ.get("SPECDEPLOY_TRTLLM_EXAMPLES", DEFAULT_EXAMPLES),
    }

    def one(match: re.Match[str]) -> str:
        name = match[1]
        if name in fixed:
            return fixed[name]
        step_id, _, key = name.rpartition(".")
        value = outputs.get(step_id, {}).get(key)
        if value is None:
            raise StepFailed(f"argv placeholder ${{{name}}}: step {step_id} has no output '{key}'")
        return str(artifact_dir / value) if key == "dir" else str(value)

    return [PLACEHOLDER.sub(one, arg) for arg in argv]


def _files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in walk(root) if p.is_file() or p.is_symlink())


def _move(src: Path, dest: Path) -> None:
    if src.is_dir() and not src.is_symlink() and src.name in CONTAINERS and dest.is_dir():
        for child in src.iterdir():
            _move(child, dest / child.name)
        return
    dest.parent.mkdir(parents=True, exist_ok=True)
    if dest.is_dir() and not dest.is_symlink():
        old = dest.with_name(f".{dest.name}.old-{os.getpid()}")
        shutil.rmtree(old, ignore_errors=True)
        dest.replace(old)
        src.replace(dest)
        shutil.rmtree(old, ignore_errors=True)
    else:
        src.replace(dest)


def _replaced(src: Path, dest: Path) -> list[Path]:
    """The files at `dest` that `_move(src, dest)` deletes: those of a replaced folder that `src` does not have."""
    if src.is_dir() and not src.is_symlink() and src.name in CONTAINERS and dest.is_dir():
        return [p for child in sorted(src.iterdir()) for p in _replaced(child, dest / child.name)]
    if not dest.is_dir() or dest.is_symlink() or not src.is_dir():
        return []
    return [
        p for p in sorted(walk(dest)) if (p.is_file() or p.is_symlink()) and not (src / p.relative_to(dest)).exists()
    ]


def swap_in(
    staging: Path, artifact_dir: Path, cache: HashCache, recorded: set[str] | frozenset[str] = frozenset()
) -> dict[str, list[Any]]:
    """Move a finished step's files into place; returns `rel -> [size, mtime_ns, sha256]` for its stamp. A file the
    swap would delete that no step recorded (`recorded`) is someone else's: refused, naming it, nothing moved."""
    foreign = [
        rel
        for entry in sorted(staging.iterdir())
        for p in _replaced(entry, artifact_dir / entry.name)
        if (rel := p.relative_to(artifact_dir).as_posix()) not in recorded
    ]
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise StepFailed(
            f"replacing {foreign[0].split('/')[0]}/ would delete files no build step wrote: {shown}",
            hint="specdeploy rewrites that folder whole: move them out of the artifact folder, then build again",
        )
    rels = _files(staging)
    for entry in sorted(staging.iterdir()):
        _move(entry, artifact_dir / entry.name)
    record = {}
    for rel in rels:
        path = artifact_dir / rel
        st = path.stat()
        record[rel] = [st.st_size, st.st_mtime_ns, cache.digest(path)]
    return record


def verify_outputs(
    artifact_dir: Path, files: dict[str, list[Any]], cache: HashCache, *, verify: bool = False
) -> str | None:
    """The first recorded output that is missing or whose content changed, else None."""
    for rel, (size, _mtime, digest) in sorted(files.items()):
        path = artifact_dir / rel
        try:
            if path.stat().st_size != size or cache.digest(path, verify=verify) != digest:
                return rel
        except OSError:
            return rel
    return None
