"""Load a profile: resolve `extends` chains, apply `--set`, validate the schema and the mechanism options.

Every problem is collected and located (`file:line:col key.path`) before anything is raised.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from difflib import get_close_matches
from pathlib import Path as FsPath
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from specdeploy.plugin.base import Mechanism
from specdeploy.profile import overrides
from specdeploy.profile.issues import Issue, Path, ProfileError
from specdeploy.profile.schema import Profile
from specdeploy.profile.shipped import find_shipped
from specdeploy.profile.yamlmarks import Document, load_document

MAX_EXTENDS_DEPTH = 16


@dataclass
class LoadedProfile:
    """A schema-valid profile plus where each value came from."""

    name: str
    file: str
    profile: Profile
    mechanism: Mechanism | None
    options: BaseModel | None
    origins: dict[Path, tuple[Document | None, int, int]] = field(default_factory=dict)
    chain: list[str] = field(default_factory=list)
    pending: list[Issue] = field(default_factory=list)
    """Errors in the mechanism options of an otherwise valid profile; `resolve` reports them together
    with the cross-field rules so one run shows every error."""

    def locate(self, issue: Issue) -> Issue:
        """Attach file:line:col of the longest known prefix of the issue's path."""
        for cut in range(len(issue.path), -1, -1):
            origin = self.origins.get(issue.path[:cut])
            if origin is not None:
                doc, line, col = origin
                if doc is None:
                    return replace(issue, file="--set")
                return issue.located(doc.file, line, col, doc.snippet(line, col))
        return replace(issue, file=self.file)

    def source_of(self, path: Path) -> str:
        """'file:line', '--set' or 'default' for the value at `path` (plan prints this)."""
        origin = self.origins.get(path)
        if origin is None:
            return "default"
        doc, line, _ = origin
        return "--set" if doc is None else f"{doc.file}:{line}"


def resolve_source(source: str) -> FsPath:
    """A file path, or the name of a shipped profile."""
    path = FsPath(source)
    if path.exists() or path.suffix in (".yaml", ".yml") or "/" in source:
        return path
    return find_shipped(source) or path


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        merged[key] = (
            _merge(merged[key], value) if isinstance(value, dict) and isinstance(merged.get(key), dict) else value
        )
    return merged


def _load_chain(path: FsPath, seen: list[FsPath], issues: list[Issue]) -> tuple[dict[str, Any], list[Document]]:
    """Data of `path` merged over its `extends` ancestors, and the documents in merge order."""
    doc, found = load_document(path)
    issues.extend(found)
    if doc is None:
        return {}, []
    parent_ref = doc.data.pop("extends", None)
    if parent_ref is None:
        return doc.data, [doc]
    line, col = doc.marks.get(("extends",), (1, 1))
    located = Issue(("extends",), "", file=doc.file).located(doc.file, line, col, doc.snippet(line, col))
    if not isinstance(parent_ref, str):
        issues.append(replace(located, message="extends must be a file path or a shipped profile name"))
        return doc.data, [doc]
    parent = FsPath(parent_ref) if FsPath(parent_ref).is_absolute() else path.parent / parent_ref
    if not parent.exists():
        parent = find_shipped(parent_ref) or parent
    resolved = parent.resolve()
    if resolved in seen:
        cycle = " -> ".join(str(p) for p in [*seen, resolved])
        issues.append(replace(located, message=f"extends cycle: {cycle}"))
        return doc.data, [doc]
    if len(seen) >= MAX_EXTENDS_DEPTH:
        issues.append(replace(located, message=f"extends chain deeper than {MAX_EXTENDS_DEPTH}"))
        return doc.data, [doc]
    if not parent.exists():
        issues.append(replace(located, message=f"extends '{parent_ref}': no such file or shipped profile"))
        return doc.data, [doc]
    base, docs = _load_chain(parent, [*seen, resolved], issues)
    return _merge(base, doc.data), [*docs, doc]


def _schema_issue(err: ErrorDetails, root: type[BaseModel] = Profile, prefix: Path = ()) -> Issue:
    """A pydantic error as an Issue; `root` is the model the error's location is relative to."""
    path: Path = (*prefix, *err["loc"])
    message, hint = err["msg"].removeprefix("Value error, "), None
    if err["type"] == "extra_forbidden":
        model: Any = root
        for part in err["loc"][:-1]:
            model = (
                overrides._model_of(model.model_fields[part].annotation)
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


def load_profile(source: str, sets: tuple[str, ...] = ()) -> LoadedProfile:
    """Load, merge, override and validate; raise ProfileError with every located issue."""
    path = resolve_source(source)
    issues: list[Issue] = []
    data, docs = _load_chain(path, [path.resolve()], issues)
    origins: dict[Path, tuple[Document | None, int, int]] = {}
    for doc in docs:
        origins.update({key: (doc, line, col) for key, (line, col) in doc.marks.items()})
    for text in sets:
        key, value, problem = overrides.parse_override(text)
        if problem:
            issues.append(problem)
            continue
        overrides.apply(data, key, value)
        origins[key] = (None, 0, 0)
    loaded = LoadedProfile(path.stem, str(path), Profile.model_construct(), None, None, origins, [d.file for d in docs])
    if not docs:
        raise ProfileError(issues)
    raw_spec = data.get("speculative")
    option_issues = _load_mechanism(loaded, raw_spec if isinstance(raw_spec, dict) else {})
    try:
        loaded.profile = Profile.model_validate(data)
    except ValidationError as exc:
        issues[:0] = [_schema_issue(e) for e in exc.errors()]
    if issues:
        issues.extend(option_issues)
    else:
        loaded.pending = [loaded.locate(i) for i in option_issues]
    if issues:
        located = [loaded.locate(i) if i.file is None else i for i in issues]
        raise ProfileError(sorted(located, key=lambda i: (i.file != "--set", i.file or "", i.line or 0, i.col or 0)))
    return loaded


def _load_mechanism(loaded: LoadedProfile, raw: dict[str, Any]) -> list[Issue]:
    """Validate the mechanism name and its options with the plugin's own schema."""
    from specdeploy.errors import UsageError
    from specdeploy.plugin.registry import get_mechanism

    name, options = raw.get("mechanism", "none"), raw.get("options") or {}
    if not isinstance(name, str):
        return []  # the schema reports the type error
    if name in ("none", "auto"):
        return [Issue(("speculative", "options"), f"mechanism '{name}' takes no options")] if options else []
    try:
        mechanism = get_mechanism(name)
    except UsageError as exc:
        return [Issue(("speculative", "mechanism"), exc.message, exc.hint)]
    loaded.mechanism = mechanism
    if not isinstance(options, dict):
        return []
    try:
        loaded.options = mechanism.parse_options(options)
    except ValidationError as exc:
        return [_schema_issue(e, mechanism.Options, ("speculative", "options")) for e in exc.errors()]
    return []
