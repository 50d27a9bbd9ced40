"""Typed `--set a.b=value` overrides: the key path is checked against the schema before anything runs."""

from __future__ import annotations

import types
import typing
from difflib import get_close_matches
from typing import Any

import yaml
from pydantic import BaseModel

from specdeploy.issues import Issue, Path
from specdeploy.profile.schema import Profile
from specdeploy.profile.yamlmarks import ProfileLoader, yaml_problem

SCALARS = (int, float, str, bool)


def _members(annotation: Any) -> tuple[Any, ...]:
    """The types a field's annotation admits: its union's members, without `Annotated` constraints."""
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return tuple(m for arg in typing.get_args(annotation) for m in _members(arg))
    return (annotation,)


def _section(annotation: Any) -> type[BaseModel] | dict[Any, Any] | None:
    """What a key leads into: a section (a model), a map (free keys, `dict`), or None for a value."""
    for member in _members(annotation):
        if isinstance(member, type) and issubclass(member, BaseModel):
            return member
        if typing.get_origin(member) is dict:
            return {}
    return None


def check_path(parts: list[str]) -> tuple[str | None, Any]:
    """(None, the key's annotation) when `parts` names a settable profile key, else (an error message with a
    suggestion, None).

    Map keys (`speculative.options.*`, `speculative.schedule.*`) are free here (`Any`): the mechanism's options
    model and the schedule's integer keys check them with the rest of the profile.
    """
    annotation: Any = Profile
    section: type[BaseModel] | dict[Any, Any] | None = Profile
    walked: list[str] = []
    for part in parts:
        if section is None:
            return f"'{'.'.join(walked)}' is a value, not a section; cannot set '{part}' inside it", None
        if isinstance(section, dict):
            return None, Any
        fields = section.model_fields
        if part not in fields:
            close = get_close_matches(part, list(fields), n=1)
            where = ".".join(walked) or "the profile"
            hint = f"; did you mean '{'.'.join([*walked, close[0]])}'?" if close else ""
            return f"unknown key '{part}' in {where}{hint}", None
        annotation = fields[part].annotation
        section = _section(annotation)
        walked.append(part)
    return None, annotation


def _text_only(annotation: Any) -> bool:
    """Whether the key takes a string and nothing YAML would read a bare word as (a version, a name)."""
    members = set(_members(annotation))
    return str in members and members <= {str, type(None)}


def null_drops(path: Path) -> bool:
    """Whether `key: null` (in an `extends` child, or `--set KEY=null`) drops the value back to its default: so on
    a key that cannot be null. On a nullable key null is a value (`hf_token_secret: null` is "no token", not the
    default `hf-token`); an unknown key is kept for the schema to report; a key inside a free map drops."""
    problem, annotation = check_path([str(part) for part in path])
    return problem is None and type(None) not in _members(annotation)


def is_table(path: Path) -> bool:
    """Whether the key holds one value that is a mapping of scalars (`speculative.schedule`: concurrency -> K), which
    a later file replaces whole, where sections and free maps (`speculative.options`) merge key by key."""
    problem, annotation = check_path([str(part) for part in path])
    return problem is None and any(
        typing.get_origin(m) is dict and _scalar(typing.get_args(m)[1]) for m in _members(annotation)
    )


def _scalar(annotation: Any) -> bool:
    members = _members(annotation)
    return len(members) == 1 and (members[0] in SCALARS or typing.get_origin(members[0]) is typing.Literal)


def parse_override(text: str) -> tuple[Path, Any, Issue | None]:
    """`speculative.draft_len=4` -> (("speculative", "draft_len"), 4, None); an Issue when malformed."""
    key, sep, raw = text.partition("=")
    parts = key.strip().split(".")
    if not sep or not key.strip():
        return (
            (),
            None,
            Issue((), f"--set '{text}' is not KEY=VALUE", "e.g. --set speculative.draft_len=4", file="--set"),
        )
    if "" in parts:  # `serving..max_seq_len` set serving.max_seq_len
        return (
            (),
            None,
            Issue(
                (),
                f"--set '{key.strip()}' has an empty key between its dots",
                "e.g. --set serving.max_seq_len=4096",
                file="--set",
            ),
        )
    problem, annotation = check_path(parts)
    path: Path = tuple(int(p) if p.isdigit() else p for p in parts)
    if problem:
        return path, None, Issue(path, problem, file="--set")
    text_only = _text_only(annotation)
    try:
        value = yaml.load(raw, Loader=ProfileLoader) if raw.strip() else ""  # noqa: S506 - ProfileLoader is safe
    except yaml.YAMLError as exc:  # the problem and its column, not the parser's multi-line dump
        if text_only:  # `description=a: b: c`
            return path, raw.strip(), None
        shown = raw if len(raw) <= 60 else f"{raw[:60]}..."  # a value 3000 brackets deep is not worth printing
        return (
            path,
            None,
            Issue(path, f"--set value '{shown}' is not valid YAML: {yaml_problem(exc, line=False)}", file="--set"),
        )
    if text_only and _typed_as_text(value, raw):
        value = raw.strip()
    return path, value, None


def _typed_as_text(value: Any, raw: str) -> bool:
    """Whether a string key takes `raw` as typed rather than what YAML read: a version (`1.3`), a mapping
    (`EAGLE-3: fast`), a list, a comment (`#1 pick`). A boolean stays one (the schema refuses it: `false` is not
    a secret's name) and a YAML null stays null."""
    if value is None:
        return raw.strip() not in ("null", "Null", "NULL", "~")
    return not isinstance(value, (str, bool))


def apply(data: dict[str, Any], path: Path, value: Any) -> bool:
    """Set the value at `path`; `null` on a key that cannot be null drops it back to its default, as in an
    `extends` child (False then)."""
    # Below the top level the keys are not all strings: `--set speculative.schedule.8=2` sets an int key.
    dropped = value is None and null_drops(path)
    node: dict[Any, Any] = data
    for part in path[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            if dropped:
                return False
            child = node[part] = {}
        node = child
    if dropped:
        node.pop(path[-1], None)
        return False
    node[path[-1]] = value
    return True
