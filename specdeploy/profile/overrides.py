"""Typed `--set a.b=value` overrides: the key path is checked against the schema before anything runs."""

from __future__ import annotations

from difflib import get_close_matches
from typing import Any

import yaml
from pydantic import BaseModel

from specdeploy.profile.issues import Issue, Path
from specdeploy.profile.schema import Profile
from specdeploy.profile.yamlmarks import ProfileLoader

FREE_KEYS = {("speculative", "options"), ("speculative", "schedule")}
"""Sub-trees whose keys are validated later (by the mechanism plugin, or as integers)."""


def _model_of(annotation: Any) -> type[BaseModel] | None:
    for candidate in (annotation, *getattr(annotation, "__args__", ())):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def check_path(parts: list[str]) -> str | None:
    """None when `parts` names a settable profile key, else an error message with a suggestion."""
    model: type[BaseModel] | None = Profile
    walked: list[str] = []
    for part in parts:
        if tuple(walked) in FREE_KEYS:
            return None
        if model is None:
            return f"'{'.'.join(walked)}' is a value, not a section; cannot set '{part}' inside it"
        if part not in model.model_fields:
            close = get_close_matches(part, list(model.model_fields), n=1)
            where = ".".join(walked) or "the profile"
            hint = f"; did you mean '{'.'.join([*walked, close[0]])}'?" if close else ""
            return f"unknown key '{part}' in {where}{hint}"
        model = _model_of(model.model_fields[part].annotation)
        walked.append(part)
    return None


def parse_override(text: str) -> tuple[Path, Any, Issue | None]:
    """`speculative.draft_len=4` -> (("speculative", "draft_len"), 4, None); an Issue when malformed."""
    key, sep, raw = text.partition("=")
    parts = [p for p in key.strip().split(".") if p]
    if not sep or not parts:
        return (), None, Issue((), f"--set '{text}' is not KEY=VALUE", "e.g. --set speculative.draft_len=4",
                               file="--set")
    problem = check_path(parts)
    path: Path = tuple(int(p) if p.isdigit() else p for p in parts)
    if problem:
        return path, None, Issue(path, problem, file="--set")
    try:
        value = yaml.load(raw, Loader=ProfileLoader) if raw.strip() else ""  # noqa: S506 - ProfileLoader is safe
    except yaml.YAMLError as exc:
        return path, None, Issue(path, f"--set value '{raw}' is not valid YAML: {exc}", file="--set")
    return path, value, None


def apply(data: dict[str, Any], path: Path, value: Any) -> None:
    # Below the top level the keys are not all strings: `--set speculative.schedule.8=2` sets an int key.
    node: dict[Any, Any] = data
    for part in path[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    node[path[-1]] = value
