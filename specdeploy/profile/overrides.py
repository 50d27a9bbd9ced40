"""Typed `--set a.b=value` overrides: the key path is checked against the schema before anything runs."""

from __future__ import annotations

from difflib import get_close_matches
from typing import Any

import yaml

from specdeploy.fast_tables import PROFILE_TABLES, load_tables
from specdeploy.issues import Issue, Path
from specdeploy.profile.yamlmarks import ProfileLoader, yaml_problem


def _section(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The object a key leads into: a section (with `properties`), a map (free keys), or None for a value."""
    for candidate in (schema, *schema.get("anyOf", ())):
        if candidate.get("type") == "object":
            return candidate
    return None


def check_path(parts: list[str]) -> tuple[str | None, dict[str, Any]]:
    """(None, the key's schema) when `parts` names a settable profile key, else (an error message with a
    suggestion, {}).

    Map keys (`speculative.options.*`, `speculative.schedule.*`) are free here: the mechanism's options
    model and the schedule's integer keys check them with the rest of the profile.
    """
    schema: dict[str, Any] = load_tables(str(PROFILE_TABLES))["Profile"]
    section: dict[str, Any] | None = schema
    walked: list[str] = []
    for part in parts:
        if section is None:
            return f"'{'.'.join(walked)}' is a value, not a section; cannot set '{part}' inside it", {}
        fields = section.get("properties")
        if fields is None:
            return None, {}
        if part not in fields:
            close = get_close_matches(part, list(fields), n=1)
            where = ".".join(walked) or "the profile"
            hint = f"; did you mean '{'.'.join([*walked, close[0]])}'?" if close else ""
            return f"unknown key '{part}' in {where}{hint}", {}
        schema = fields[part]
        section = _section(schema)
        walked.append(part)
    return None, schema


def _text_only(schema: dict[str, Any]) -> bool:
    """Whether the key takes a string and nothing YAML would read a bare word as (a version, a name)."""
    kinds = {s.get("type") for s in (schema, *schema.get("anyOf", ())) if "type" in s}
    return "string" in kinds and kinds <= {"string", "null"} and "enum" not in schema


def null_drops(path: Path) -> bool:
    """Whether `key: null` (in an `extends` child, or `--set KEY=null`) drops the value back to its default: so on
    a key that cannot be null. On a nullable key null is a value (`hf_token_secret: null` is "no token", not the
    default `hf-token`); an unknown key is kept for the schema to report; a key inside a free map drops."""
    problem, schema = check_path([str(part) for part in path])
    return problem is None and not any(s.get("type") == "null" for s in (schema, *schema.get("anyOf", ())))


def is_table(path: Path) -> bool:
    """Whether the key holds one value that is a mapping of scalars (`speculative.schedule`: concurrency -> K), which
    a later file replaces whole, where sections and free maps (`speculative.options`) merge key by key."""
    problem, schema = check_path([str(part) for part in path])
    return problem is None and any(
        s.get("type") == "object" and "properties" not in s and isinstance(s.get("additionalProperties"), dict)
        and s["additionalProperties"].get("type") in ("integer", "number", "string", "boolean")
        for s in (schema, *schema.get("anyOf", ())))


def parse_override(text: str) -> tuple[Path, Any, Issue | None]:
    """`speculative.draft_len=4` -> (("speculative", "draft_len"), 4, None); an Issue when malformed."""
    key, sep, raw = text.partition("=")
    parts = key.strip().split(".")
    if not sep or not key.strip():
        return (), None, Issue((), f"--set '{text}' is not KEY=VALUE", "e.g. --set speculative.draft_len=4",
                               file="--set")
    if "" in parts:  # `serving..max_seq_len` set serving.max_seq_len
        return (), None, Issue((), f"--set '{key.strip()}' has an empty key between its dots",
                               "e.g. --set serving.max_seq_len=4096", file="--set")
    problem, schema = check_path(parts)
    path: Path = tuple(int(p) if p.isdigit() else p for p in parts)
    if problem:
        return path, None, Issue(path, problem, file="--set")
    text_only = _text_only(schema)
    try:
        value = yaml.load(raw, Loader=ProfileLoader) if raw.strip() else ""  # noqa: S506 - ProfileLoader is safe
    except yaml.YAMLError as exc:  # the problem and its column, not the parser's multi-line dump
        if text_only:  # `description=a: b: c`
            return path, raw.strip(), None
        shown = raw if len(raw) <= 60 else f"{raw[:60]}..."  # a value 3000 brackets deep is not worth printing
        return path, None, Issue(path, f"--set value '{shown}' is not valid YAML: {yaml_problem(exc, line=False)}",
                                 file="--set")
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
