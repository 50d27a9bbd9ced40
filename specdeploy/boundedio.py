"""Bounded reading of input specdeploy did not write itself: JSON, YAML and folder trees in an artifact, a profile,
a dataset, a request body.

Python's parsers recurse once per level of nesting (json's scanner, PyYAML's composer), and so does pathlib's
`rglob`: a file nested a few thousand levels deep, or a folder tree that deep, ended in a RecursionError. Here
nesting stops at MAX_DEPTH, only a regular file within its size limit is read (a FIFO or /dev/zero would be read
forever), strings must be Unicode text (a lone surrogate cannot be written out as UTF-8), JSON numbers finite
(RFC 8259 has no NaN or Infinity; a file Python's json wrote may be read with them), and YAML aliases may not
expand past MAX_VALUES values (nested ones expand without bound). Every refusal is an `InputError` (a ValueError)
that names the file and line.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

MAX_DEPTH = 64
"""Levels of nesting any input may have: specdeploy's own files have fewer than 10."""
MAX_BYTES = 16 << 20
"""Size of a JSON or YAML file unless the reader says otherwise."""
MAX_VALUES = 1 << 20
"""Values (each scalar, list and mapping) a YAML document may expand to through its aliases."""
_TOKENS = re.compile(r'"(?:[^"\\\n]|\\.)*"|[\[{\]}\n]|-?Infinity|NaN')


class InputError(ValueError):
    """Input that cannot be read as what it should be: `str()` is `SOURCE:LINE:COLUMN: problem`."""

    def __init__(
        self, problem: str, source: str | None = None, line: int | None = None, col: int | None = None
    ) -> None:
        self.problem, self.source, self.line, self.col = problem, source, line, col
        where = ":".join(str(part) for part in (source, line, col) if part) if source else None
        super().__init__(f"{where}: {problem}" if where else problem)

    @property
    def detail(self) -> str:
        """The problem and where it is, for a message that names the file itself."""
        where = ", ".join(f"{name} {at}" for name, at in (("line", self.line), ("column", self.col)) if at)
        return f"{self.problem} ({where})" if where else self.problem


def read_regular(path: str | os.PathLike[str], max_bytes: int = MAX_BYTES, what: str = "file") -> bytes:
    """The bytes of `path`: a regular file (never a FIFO, device or folder) of at most `max_bytes`. A missing file
    raises FileNotFoundError; `what` names the file in the other refusals ("profile", "dataset")."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InputError("a symlink loop (a link that leads back to itself)", str(path)) from None
        raise
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise InputError(f"is a directory, not a {what} file", str(path))
        if not stat.S_ISREG(info.st_mode):
            why = f" (a device, FIFO or socket is never read as a {what})" if what != "file" else ""
            raise InputError(f"not a regular file{why}", str(path))
        if info.st_size > max_bytes:
            raise InputError(f"{info.st_size} bytes: larger than a {what} can be ({max_bytes} bytes)", str(path))
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read(max_bytes + 1)
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise InputError(f"larger than a {what} can be ({max_bytes} bytes)", str(path))
    return data


def read_json(path: str | os.PathLike[str], max_bytes: int = MAX_BYTES, *, constants: bool = False) -> Any:
    """The JSON value in the file at `path` (see `loads_json`)."""
    return loads_json(read_regular(path, max_bytes), str(path), constants=constants)


def read_yaml(path: str | os.PathLike[str], max_bytes: int = MAX_BYTES) -> Any:
    """The YAML value in the file at `path` (see `loads_yaml`)."""
    data = read_regular(path, max_bytes)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", str(path)) from None
    return loads_yaml(text, str(path))


def loads_json(data: str | bytes, source: str = "JSON", *, line: int = 1, constants: bool = False) -> Any:
    """One JSON value, checked as the module says; `line` is where `data` begins in `source` (a JSONL line).
    `constants`: NaN and Infinity read as Python's json reads them (a config.json Python wrote, checked later)."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        value = json.loads(text, parse_constant=None if constants else _refuse_constant)
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", source) from None
    except RecursionError:
        value = None
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg}", source, line + exc.lineno - 1, exc.colno) from None
    except ValueError as exc:  # NaN or Infinity; an integer of more digits than Python converts
        at = _first_problem(text) if isinstance(exc, _Constant) else None
        raise InputError(f"not valid JSON: {exc}", source, line + at - 1 if at else None) from None
    else:
        problem = _problem(value)
        if problem is None:
            return value
        if problem != "deep":
            raise InputError(problem, source, line if "\n" not in text else None)
    at = _first_problem(text)
    raise InputError(f"nested deeper than {MAX_DEPTH} levels", source, line + at - 1 if at else None)


class BoundedLoader(yaml.SafeLoader):
    """SafeLoader whose composer stops at MAX_DEPTH levels."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.depth = 0

    def compose_node(self, parent: yaml.Node | None, index: object) -> yaml.Node | None:  # type: ignore[override]
        level = int(self.check_event(yaml.SequenceStartEvent, yaml.MappingStartEvent))  # as JSON's are counted
        self.depth += level
        try:
            if self.depth > MAX_DEPTH:
                raise yaml.composer.ComposerError(
                    None, None, f"nested deeper than {MAX_DEPTH} levels", self.peek_event().start_mark
                )
            return super().compose_node(parent, index)  # type: ignore[no-any-return]
        finally:
            self.depth -= level


def loads_yaml(text: str, source: str = "YAML", *, documents: bool = False) -> Any:
    """One YAML value (`documents`: the list of a multi-document stream's), checked as the module says."""
    loader = BoundedLoader(text)
    try:
        if documents:
            values = []
            while loader.check_data():
                values.append(loader.get_data())
            value: Any = values
        else:
            value = loader.get_single_data()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "invalid YAML"
        raise InputError(
            f"not valid YAML: {problem}", source, *((mark.line + 1, mark.column + 1) if mark else ())
        ) from None
    except yaml.YAMLError as exc:
        raise InputError(f"not valid YAML: {exc}", source) from None
    finally:
        loader.dispose()
    problem = _problem(value)
    if problem is not None:  # deeper than the composer allows only through aliases
        raise InputError(f"nested deeper than {MAX_DEPTH} levels" if problem == "deep" else problem, source)
    return value


def walk(root: Path) -> Iterator[Path]:
    """Every entry below `root`, as `root.rglob("*")` yields them (symlinks listed, never followed; a folder that
    may not be read skipped), with a stack instead of recursion."""
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as entries:
                found = [(folder / entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]
        except PermissionError:
            continue
        for path, is_dir in found:
            yield path
            if is_dir:
                stack.append(path)


class _Constant(ValueError):
    pass


def _refuse_constant(name: str) -> Any:
    raise _Constant(f"{name} is not a JSON number (RFC 8259 allows finite numbers only)")


def _problem(value: Any) -> str | None:
    """Why a parsed value is refused ("deep": nested deeper than MAX_DEPTH), or None; without recursion, and
    without walking more than MAX_VALUES values (YAML aliases share one object among many places)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    for _ in range(MAX_VALUES):
        if not stack:
            return None
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth >= MAX_DEPTH:
                return "deep"
            children = [*item.keys(), *item.values()] if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as exc:
                return (
                    f"a string holds {item[exc.start : exc.end].encode('unicode_escape').decode()}, a lone "
                    "surrogate: not Unicode text"
                )
    return None if not stack else f"more than {MAX_VALUES} values (aliases expand without bound)"


def _first_problem(text: str) -> int | None:
    """The line of the first bracket nested deeper than MAX_DEPTH, or of the first NaN or Infinity."""
    line, depth = 1, 0
    for token in _TOKENS.finditer(text):
        kind = token.group()
        if kind == "\n":
            line += 1
        elif kind in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return line
        elif kind in "]}":
            depth -= 1
        elif not kind.startswith('"'):
            return line
    return None
