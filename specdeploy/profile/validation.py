"""The pydantic path: validate with the models, and turn their errors into located, suggested Issues.

Every profile error comes from here (the fast path only ever accepts), so messages are worded once.
"""

from __future__ import annotations

import re
from difflib import get_close_matches
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from specdeploy.profile.issues import Issue, Path
from specdeploy.profile.schema import Profile

if TYPE_CHECKING:
    from specdeploy.plugin.base import Mechanism


def validate_models(data: dict[str, Any], mechanism: Mechanism | None
                    ) -> tuple[Profile | None, BaseModel | None, list[Issue], list[Issue]]:
    """(profile, options, schema issues, option issues); a part is None when it has issues."""
    profile, options, schema_issues, option_issues = None, None, [], []
    raw_spec = data.get("speculative")
    raw = (raw_spec.get("options") if isinstance(raw_spec, dict) else None) or {}
    if mechanism is not None and isinstance(raw, dict):
        try:
            options = mechanism.parse_options(raw)
        except ValidationError as exc:
            option_issues = [_schema_issue(e, mechanism.Options, ("speculative", "options")) for e in exc.errors()]
    try:
        profile = Profile.model_validate(data)
    except ValidationError as exc:
        schema_issues = [_schema_issue(e) for e in exc.errors()]
    return profile, options, schema_issues, option_issues


def _model_of(annotation: Any) -> type[BaseModel] | None:
    for candidate in (annotation, *getattr(annotation, "__args__", ())):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def _schema_issue(err: ErrorDetails, root: type[BaseModel] = Profile, prefix: Path = ()) -> Issue:
    """A pydantic error as an Issue; `root` is the model the error's location is relative to."""
    path: Path = (*prefix, *err["loc"])
    message, hint = err["msg"].removeprefix("Value error, "), None
    if err["type"] == "extra_forbidden":
        model: Any = root
        for part in err["loc"][:-1]:
            model = (
                _model_of(model.model_fields[part].annotation)
                if part in getattr(model, "model_fields", {})
                else None
            )
            if model is None:
                break
        fields = list(getattr(model, "model_fields", {}))
        close = get_close_matches(str(path[-1]), fields, n=1)
        message = f"unknown key '{path[-1]}'"
        hint = f"did you mean '{close[0]}'?" if close else (f"valid keys: {', '.join(fields)}" if fields else None)
    elif err["type"] == "literal_error" and isinstance(err.get("input"), str):
        expected = re.findall(r"'([^']*)'", str(err.get("ctx", {}).get("expected", "")))
        close = [e for e in expected if err["input"] and e.startswith(err["input"])] or get_close_matches(
            err["input"], expected, n=1, cutoff=0.5
        )
        hint = f"did you mean {' or '.join(repr(c) for c in close)}?" if close else None
        message = f"{message} (got {err['input']!r:.60})"
    elif err["type"] == "string_type" and isinstance(err.get("input"), bool):
        hint = "YAML 1.1 reads on/off/yes/no as booleans: quote the value"
    elif "input" in err and err["type"] not in ("missing", "value_error"):
        message = f"{message} (got {err['input']!r:.60})"
    return Issue(path, message, hint)
