"""Content hashes with a cheap first check: size + mtime from a cache, the full sha256 only on a mismatch.

This is what keeps a no-op rebuild of a profile with multi-GB checkpoints under a second.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

from specdeploy._io import write_json_atomic
from specdeploy.boundedio import read_json

CHUNK = 1 << 20


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def canonical_hash(obj: Any) -> str:
    """sha256 of canonical JSON (sorted keys, no whitespace): the cache-key primitive."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str, allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


class HashCache:
    """`path -> (size, mtime_ns, sha256)`, persisted as JSON next to the stamps."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.entries: dict[str, list[Any]] = {}
        self.dirty = False
        if path is not None and path.is_file():
            try:
                entries = read_json(path)
                self.entries = entries if isinstance(entries, dict) else {}
            except (OSError, ValueError):
                self.entries = {}

    def digest(self, file: Path, *, verify: bool = False) -> str:
        """The file's sha256; trusted from the cache when size and mtime match (unless `verify`)."""
        real = file.resolve()
        st = real.stat()
        key = str(real)
        cached = self.entries.get(key)
        if not verify and cached and cached[0] == st.st_size and cached[1] == st.st_mtime_ns:
            return str(cached[2])
        digest = sha256_file(real)
        self.entries[key] = [st.st_size, st.st_mtime_ns, digest]
        self.dirty = True
        return digest

    def save(self) -> None:
        if self.path is not None and self.dirty:
            write_json_atomic(self.path, self.entries, indent=0)
            self.dirty = False


def list_files(root: Path, patterns: Iterable[str] | None = None) -> list[Path]:
    """Regular files under root (symlinks followed, hidden `.cache`-style folders skipped), sorted."""
    pats = list(patterns or [])
    out = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            if name.startswith(".") or (pats and not any(fnmatch(rel, p) for p in pats)):
                continue
            out.append(path)
    return out


def tree_digests(
    root: Path, cache: HashCache, patterns: Iterable[str] | None = None, *, verify: bool = False
) -> dict[str, str]:
    """`relative path -> sha256` of every file under root (a single file hashes as its own name)."""
    if root.is_file():
        return {root.name: cache.digest(root, verify=verify)}
    return {p.relative_to(root).as_posix(): cache.digest(p, verify=verify) for p in list_files(root, patterns)}
