"""Safe YAML loading that remembers where every key came from.

Two passes: `compose` builds a node tree with marks (duplicate keys are found here), then the
safe constructor builds plain data. YAML 1.1 traps are handled: `2e-5` reads as a float, and
tags beyond the safe set (`!!python/object`) are refused with their location.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path as FsPath
from typing import Any

import yaml

from specdeploy.profile.issues import Issue, Path


class ProfileLoader(yaml.SafeLoader):
    """SafeLoader that reads exponent floats without a dot (`2e-5`) as floats."""


ProfileLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


@dataclass
class Document:
    """One YAML file: its data, the (line, col) of every key path, and its lines for snippets."""

    file: str
    data: dict[str, Any]
    marks: dict[Path, tuple[int, int]] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)

    def snippet(self, line: int, col: int) -> str | None:
        if not 1 <= line <= len(self.lines):
            return None
        text = self.lines[line - 1].rstrip("\n")
        return f"  {line:4d} | {text}\n         {' ' * max(0, col - 1)}^"


def _issue_at(file: str, lines: list[str], mark: yaml.Mark | None, message: str,
              suggestion: str | None = None, path: Path = ()) -> Issue:
    issue = Issue(path, message, suggestion, file=file)
    if mark is None:
        return issue
    doc = Document(file, {}, lines=lines)
    return issue.located(file, mark.line + 1, mark.column + 1, doc.snippet(mark.line + 1, mark.column + 1))


def _walk(node: yaml.Node, path: Path, doc: Document, issues: list[Issue]) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, yaml.Mark] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                _walk(value_node, path, doc, issues)
                continue
            key = str(key_node.value)
            if key in seen:
                issues.append(_issue_at(doc.file, doc.lines, key_node.start_mark,
                                        f"duplicate key '{key}' (first defined on line {seen[key].line + 1})",
                                        "remove one of the two; YAML would silently keep the last", (*path, key)))
                continue
            seen[key] = key_node.start_mark
            sub = (*path, _as_key(key_node))
            doc.marks.setdefault(sub, (key_node.start_mark.line + 1, key_node.start_mark.column + 1))
            _walk(value_node, sub, doc, issues)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            doc.marks.setdefault((*path, index), (item.start_mark.line + 1, item.start_mark.column + 1))
            _walk(item, (*path, index), doc, issues)


def _as_key(key_node: yaml.Node) -> str | int:
    """Integer-looking keys (schedule: {1: 4}) stay ints so paths match pydantic's locations."""
    value = key_node.value
    if key_node.tag == "tag:yaml.org,2002:int":
        try:
            return int(value)
        except ValueError:
            return str(value)
    return str(value)


def load_document(path: FsPath) -> tuple[Document | None, list[Issue]]:
    """Read one profile file; never raises for bad input, returns located issues instead."""
    file = str(path)
    if not path.exists():
        return None, [Issue((), "file not found", "check the path, or `specdeploy profiles list` for shipped ones",
                            file=file)]
    if path.is_dir():
        return None, [Issue((), "is a directory, not a profile file", file=file)]
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, [Issue((), f"not a UTF-8 text file (byte {exc.start})", file=file)]
    except OSError as exc:
        return None, [Issue((), f"cannot read: {exc.strerror}", file=file)]
    return parse_document(text, file)


def parse_document(text: str, file: str) -> tuple[Document | None, list[Issue]]:
    lines = text.splitlines()
    if "\x00" in text:
        return None, [Issue((), "not a text file (contains NUL bytes)", file=file)]
    if not text.strip() or all(not ln.strip() or ln.lstrip().startswith("#") for ln in lines):
        return None, [Issue((), "empty profile", "a profile needs at least `target: {model: ...}`", file=file)]
    loader: ProfileLoader | None = None
    try:
        loader = ProfileLoader(text)
        node = loader.get_single_node()
        if node is None:
            return None, [Issue((), "empty profile", file=file)]
        doc = Document(file, {}, lines=lines)
        issues: list[Issue] = []
        _walk(node, (), doc, issues)
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        problem = exc.problem or exc.context or "invalid YAML"
        hint = ("only plain YAML is allowed; tags like !!python/object are refused"
                if "constructor" in type(exc).__name__.lower() else None)
        return None, [_issue_at(file, lines, exc.problem_mark, f"YAML error: {problem}", hint)]
    except yaml.YAMLError as exc:
        return None, [Issue((), f"YAML error: {exc}", file=file)]
    except RecursionError:
        return None, [Issue((), "YAML nesting is too deep", file=file)]
    finally:
        if loader is not None:
            loader.dispose()
    if not isinstance(data, dict):
        return None, [_issue_at(file, lines, node.start_mark,
                                f"a profile must be a mapping of sections, not a {type(data).__name__}")]
    doc.data = data
    return doc, issues
