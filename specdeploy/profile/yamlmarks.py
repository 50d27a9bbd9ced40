"""Safe YAML loading that remembers where every key came from.

Two passes: `compose` builds a node tree with marks (duplicate keys are found here), then the
safe constructor builds plain data. YAML 1.1 traps are handled: `2e-5` reads as a float, and
tags beyond the safe set (`!!python/object`) are refused with their location. Aliases are refused
(nested ones expand without bound: a 411-byte "billion laughs" file never finished), nesting is bounded
(specdeploy.boundedio's loader), and only a regular file of at most MAX_BYTES is read. A file that is
not a profile (no .yaml/.yml name, or not a mapping) never has its lines shown in an error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path as FsPath
from typing import Any

import yaml

from specdeploy.boundedio import BoundedLoader, InputError, read_regular
from specdeploy.issues import Issue, Path

MAX_BYTES = 1 << 20
PROFILE_SUFFIXES = (".yaml", ".yml")


class ProfileLoader(BoundedLoader):
    """The bounded loader, reading exponent floats without a dot (`2e-5`) as floats and refusing aliases."""

    def compose_node(self, parent: yaml.Node | None, index: object) -> yaml.Node | None:  # type: ignore[override]
        if self.check_event(yaml.AliasEvent):
            raise yaml.composer.ComposerError(
                None, None, "aliases (*name, <<: *name) are not allowed in a profile", self.peek_event().start_mark
            )
        return super().compose_node(parent, index)


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
    typed: dict[Path, str] = field(default_factory=dict)
    """The text of each unquoted value YAML read as something else than a string: a "quote it" hint quotes what
    was typed (`1.10` is the float 1.1, `0755` the int 493)."""

    def snippet(self, line: int, col: int) -> str | None:
        if not 1 <= line <= len(self.lines):
            return None
        text = self.lines[line - 1].rstrip("\n")
        return f"  {line:4d} | {text}\n         {' ' * max(0, col - 1)}^"


def _issue_at(
    file: str, lines: list[str], mark: yaml.Mark | None, message: str, suggestion: str | None = None, path: Path = ()
) -> Issue:
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
                issues.append(
                    _issue_at(
                        doc.file,
                        doc.lines,
                        key_node.start_mark,
                        f"duplicate key '{key}' (first defined on line {seen[key].line + 1})",
                        "remove one of the two; YAML would silently keep the last",
                        (*path, key),
                    )
                )
                continue
            seen[key] = key_node.start_mark
            sub = (*path, _as_key(key_node))
            doc.marks.setdefault(sub, (key_node.start_mark.line + 1, key_node.start_mark.column + 1))
            _walk(value_node, sub, doc, issues)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            doc.marks.setdefault((*path, index), (item.start_mark.line + 1, item.start_mark.column + 1))
            _walk(item, (*path, index), doc, issues)
    elif isinstance(node, yaml.ScalarNode) and node.style is None and node.tag != "tag:yaml.org,2002:str":
        doc.typed.setdefault(path, node.value)


def _as_key(key_node: yaml.Node) -> str | int:
    """Integer-looking keys (schedule: {1: 4}) stay ints so paths match pydantic's locations."""
    value = key_node.value
    if key_node.tag == "tag:yaml.org,2002:int":
        try:
            return int(value)
        except ValueError:
            return str(value)
    return str(value)


def load_document(path: FsPath, *, show_lines: bool = True) -> tuple[Document | None, list[Issue]]:
    """Read one profile file; never raises for bad input, returns located issues instead. Errors quote its
    lines only when `show_lines` and it is named like a profile."""
    file = str(path)
    try:
        data = read_regular(path, MAX_BYTES, "profile").decode("utf-8")
    except FileNotFoundError:
        return None, [
            Issue((), "file not found", "check the path, or `specdeploy profiles list` for shipped ones", file=file)
        ]
    except UnicodeDecodeError as exc:
        return None, [Issue((), f"not a UTF-8 text file (byte {exc.start})", file=file)]
    except InputError as exc:
        folder = "directory" in exc.problem  # `validate profiles/`: the shell expands what it should take
        return None, [
            Issue(
                (),
                exc.problem,
                f"pass its profiles: {path}/*.yaml (shipped ones: profiles/*/*.yaml)" if folder else None,
                file=file,
            )
        ]
    except OSError as exc:
        return None, [Issue((), f"cannot read: {exc.strerror or exc}", file=file)]
    return parse_document(data, file, show_lines=show_lines and path.suffix in PROFILE_SUFFIXES)


def yaml_problem(exc: yaml.YAMLError, *, line: bool = True) -> str:
    """The parser's problem and where it is, in one line (not its multi-line dump): a `--set` value (`line` False:
    it has one) or a file that is not a profile."""
    mark = getattr(exc, "problem_mark", None)
    what = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if mark is None:
        return what
    return f"{what} ({f'line {mark.line + 1}, ' if line else ''}column {mark.column + 1})"


def _yaml_issue(exc: yaml.MarkedYAMLError, file: str, lines: list[str]) -> Issue:
    """The parser's problem at its mark, where the construct it was in began (an unclosed `{` is lines above), and
    a hint for the usual causes."""
    problem = exc.problem or exc.context or "invalid YAML"
    began = exc.context_mark if exc.problem and exc.context else None
    if began is not None and (exc.problem_mark is None or began.line != exc.problem_mark.line):
        problem += f" ({exc.context} that began at line {began.line + 1}, column {began.column + 1})"
    hint = (
        "only plain YAML is allowed; tags like !!python/object are refused"
        if "constructor" in type(exc).__name__.lower()
        else "write the value out; anchors and aliases can expand without bound"
        if "aliases" in problem
        else "indent with spaces: YAML does not allow tabs"
        if "'\\t'" in problem
        else None
    )
    return _issue_at(file, lines, exc.problem_mark, f"YAML error: {problem}", hint)


def parse_document(text: str, file: str, *, show_lines: bool = True) -> tuple[Document | None, list[Issue]]:
    """Parse profile text; `show_lines` False (not a profile's name) keeps its content out of every error."""
    if len(text) > MAX_BYTES:
        return None, [Issue((), f"larger than a profile can be ({MAX_BYTES} bytes)", file=file)]
    lines = text.splitlines() if show_lines else []
    if "\x00" in text:
        return None, [Issue((), "not a text file (contains NUL bytes)", file=file)]
    if all(not ln.strip() or ln.lstrip().startswith("#") for ln in text.splitlines()):  # `lines` may be hidden
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
        return None, [_yaml_issue(exc, file, lines)]
    except yaml.YAMLError as exc:
        return None, [Issue((), f"YAML error: {exc}", file=file)]
    finally:
        if loader is not None:
            loader.dispose()
    if not isinstance(data, dict):  # not a profile: its content stays out of the message
        return None, [
            _issue_at(
                file, [], node.start_mark, f"a profile must be a mapping of sections, not a {type(data).__name__}"
            )
        ]
    doc.data = data
    return doc, issues
