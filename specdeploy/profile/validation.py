"""Validate with the models, and turn their errors into located, suggested Issues.

Every profile error comes from here, so messages are worded once.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from difflib import get_close_matches
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from specdeploy.issues import Issue, Path
from specdeploy.profile.schema import Profile

if TYPE_CHECKING:
    from specdeploy.plugin.base import Mechanism


def validate_models(
    data: dict[str, Any],
    mechanism: Mechanism | None,
    typed: Callable[[Path], str | None] = lambda _path: None,
) -> tuple[Profile | None, BaseModel | None, list[Issue], list[Issue]]:
    """(profile, options, schema issues, option issues); a part is None when it has issues. `typed`: the text
    the user typed for the value at a path, when known (a hint quotes it)."""
    profile, options, schema_issues, option_issues = None, None, [], []
    raw_spec = data.get("speculative")
    raw = (raw_spec.get("options") if isinstance(raw_spec, dict) else None) or {}
    if mechanism is not None and isinstance(raw, dict):
        try:
            options = mechanism.parse_options(raw)
        except ValidationError as exc:
            option_issues = [
                _schema_issue(e, typed, mechanism.Options, ("speculative", "options"))
                for e in _merge_unions(exc.errors())
            ]
    try:
        profile = Profile.model_validate(data)
    except ValidationError as exc:
        schema_issues = [_schema_issue(e, typed) for e in _merge_unions(exc.errors())]
    return profile, options, schema_issues, option_issues


_UNION_TAG = re.compile(r"^(int|float|str|bool)$|^[a-z-]+\[.*\]$")
"""How pydantic names a union member in an error's location: `draft_len.int`, `draft_len.literal['auto']`."""
_KINDS = {"int": "an integer", "float": "a number", "str": "a string", "bool": "a boolean"}


def _merge_unions(errors: list[ErrorDetails]) -> list[ErrorDetails]:
    """One error at the key for a value no member of a union accepts (`int | Literal['auto']` gave two, located
    at `draft_len.int` and `draft_len.literal['auto']`, neither a key): 'an integer or 'auto'', with the first
    member's detail and the literal's suggestion."""

    def parent(err: ErrorDetails) -> tuple[Any, ...] | None:
        tag = err["loc"][-1] if err["loc"] else None
        member = isinstance(tag, str) and _UNION_TAG.match(tag) and err["type"] != "extra_forbidden"
        return tuple(err["loc"][:-1]) if member else None

    groups: dict[tuple[Any, ...], list[ErrorDetails]] = {}
    for err in errors:
        key = parent(err)
        if key is not None:
            groups.setdefault(key, []).append(err)
    merged: list[ErrorDetails] = []
    for err in errors:
        key = parent(err)
        group = groups.get(key, []) if key is not None else []
        if len(group) < 2:  # not a union (an unknown key named `int` is an ordinary error)
            merged.append(err)
        elif group[0] is err:
            kinds = [_KINDS.get(str(e["loc"][-1]), str(e.get("ctx", {}).get("expected", e["loc"][-1]))) for e in group]
            detail = next((e["msg"].partition(", ")[2] for e in group if ", " in e["msg"]), "")
            expected = [e.get("ctx", {}).get("expected", "") for e in group if e["type"] == "literal_error"]
            merged.append(
                {
                    **err,
                    "loc": err["loc"][:-1],
                    "type": "union_merged",
                    "ctx": {"expected": " ".join(expected)},
                    "msg": f"Input should be {' or '.join(kinds)}" + (f", {detail}" if detail else ""),
                }
            )
    return merged


def _model_of(annotation: Any) -> type[BaseModel] | None:
    for candidate in (annotation, *getattr(annotation, "__args__", ())):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def _schema_issue(
    err: ErrorDetails, typed: Callable[[Path], str | None], root: type[BaseModel] = Profile, prefix: Path = ()
) -> Issue:
    """A pydantic error as an Issue; `root` is the model the error's location is relative to."""
    path: Path = (*prefix, *err["loc"])
    message, hint = err["msg"].removeprefix("Value error, "), None
    if path and path[-1] == "[key]":  # pydantic's mark for a mapping's key (`schedule: {many: 2}`)
        path, message = path[:-1], f"key: {message}"
    if err["type"] == "extra_forbidden":
        model: Any = root
        for part in err["loc"][:-1]:
            model = (
                _model_of(model.model_fields[part].annotation) if part in getattr(model, "model_fields", {}) else None
            )
            if model is None:
                break
        fields = list(getattr(model, "model_fields", {}))
        close = get_close_matches(str(path[-1]), fields, n=1)
        message = f"unknown key '{path[-1]}'"
        hint = f"did you mean '{close[0]}'?" if close else (f"valid keys: {', '.join(fields)}" if fields else None)
    elif err["type"] in ("literal_error", "union_merged") and isinstance(err.get("input"), str):
        expected = re.findall(r"'([^']*)'", str(err.get("ctx", {}).get("expected", "")))
        close = [e for e in expected if err["input"] and e.startswith(err["input"])] or get_close_matches(
            err["input"], expected, n=1, cutoff=0.5
        )
        hint = f"did you mean {' or '.join(repr(c) for c in close)}?" if close else None
        message = f"{message} (got {err['input']!r:.60})"
    elif err["type"] == "string_type" and isinstance(err.get("input"), bool):
        hint = "YAML 1.1 reads on/off/yes/no as booleans: quote the value"
    elif err["type"] == "string_type" and isinstance(err.get("input"), (int, float)):
        hint = f"quote it: '{typed(path) or err['input']}'"  # `trtllm_version: 1.10` is the YAML float 1.1
        message = f"{message} (got {err['input']!r:.60})"
    elif "input" in err and err["type"] not in ("missing", "value_error"):
        message = f"{message} (got {err['input']!r:.60})"
    return Issue(path, message, hint)
