"""Atomic file writes: a Ctrl-C or crash mid-write must never leave a partial result file behind."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes, *, private: bool = False) -> Path:
    """Write to a temp file in the same folder, fsync, then `os.replace` (atomic on POSIX); `private`: the
    owner's alone (0600) from the start."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if not private:
            tmp.chmod(0o666 & ~_umask())  # mkstemp creates 0600; give the file ordinary permissions
        tmp.replace(target)
    except BaseException:
        # KeyboardInterrupt included: remove the temp file, leave any previous target untouched.
        tmp.unlink(missing_ok=True)
        raise
    return target


def write_text_atomic(path: str | os.PathLike[str], text: str, *, private: bool = False) -> Path:
    """Atomically write UTF-8 text."""
    return write_bytes_atomic(path, text.encode("utf-8"), private=private)


def write_json_atomic(path: str | os.PathLike[str], obj: Any, *, indent: int = 2, private: bool = False) -> Path:
    """Atomically write `obj` as JSON (RFC 8259: never NaN or Infinity; sorted keys, trailing newline);
    serialization errors leave no file."""
    text = json.dumps(obj, indent=indent, sort_keys=True, default=_default, allow_nan=False) + "\n"
    return write_text_atomic(path, text, private=private)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _default(value: Any) -> Any:
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serializable: {type(value).__name__}")
