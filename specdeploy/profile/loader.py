"""Load a profile: resolve `extends` chains, apply `--set`, validate the schema and the mechanism options.

Every problem is collected and located (`file:line:col key.path`) before anything is raised. One validator serves
every command: the pydantic models (`specdeploy.profile.validation`) decide a profile and word every error.
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from difflib import get_close_matches
from pathlib import Path as FsPath
from typing import TYPE_CHECKING, Any

from specdeploy._resources import data_dir
from specdeploy.errors import UsageError
from specdeploy.issues import Issue, Path, ProfileError
from specdeploy.plugin.registry import get_mechanism
from specdeploy.profile import overrides
from specdeploy.profile.gpu import gpu_issues
from specdeploy.profile.schema import Profile
from specdeploy.profile.shipped import find_shipped, shipped_profiles
from specdeploy.profile.validation import validate_models
from specdeploy.profile.yamlmarks import PROFILE_SUFFIXES, Document, load_document

if TYPE_CHECKING:
    from pydantic import BaseModel

    from specdeploy.plugin.base import Mechanism

Origins = dict[Path, tuple[Document | None, int, int]]

MAX_EXTENDS_DEPTH = 16
SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,127}")
MAX_REPORTED = 100
"""Errors shown at once; beyond this (1.5 M unknown keys printed 6 M lines) a last line says how many more."""


@dataclass
class LoadedProfile:
    """A schema-valid profile plus where each value came from; `options` (the mechanism's `Options` instance) is
    None when the mechanism's options are invalid."""

    name: str
    file: str
    profile: Profile
    mechanism: Mechanism | None
    options: BaseModel | None
    origins: Origins = field(default_factory=dict)
    chain: list[str] = field(default_factory=list)
    pending: list[Issue] = field(default_factory=list)
    """Errors in the mechanism options of an otherwise valid profile; `resolve` reports them together
    with the cross-field rules so one run shows every error."""

    def locate(self, issue: Issue) -> Issue:
        """Attach file:line:col of the longest known prefix of the issue's path."""
        return _locate(issue, self.origins, self.file)

    def source_of(self, path: Path) -> str:
        """'file:line', '--set' or 'default' for the value at `path` (plan prints this)."""
        origin = self.origins.get(path) or self.origins.get(  # a mapping's integer keys, e.g. tune.acceptance_al.4
            tuple(int(p) if isinstance(p, str) and p.isdigit() else p for p in path)
        )
        if origin is None:
            return "default"
        doc, line, _ = origin
        return "--set" if doc is None else f"{doc.file}:{line}"


def _locate(issue: Issue, origins: Origins, file: str) -> Issue:
    if (
        issue.path
        and issue.path not in origins
        and any(  # a mapping only --set gave (`schedule.8=2`)
            origin[0] is None and path[: len(issue.path)] == issue.path for path, origin in origins.items()
        )
    ):
        return replace(issue, file="--set")
    for cut in range(len(issue.path), -1, -1):
        origin = origins.get(issue.path[:cut])
        if origin is not None:
            doc, line, col = origin
            if doc is None:
                return replace(issue, file="--set")
            if doc.file != file and cut:  # a parent's value (often a shipped profile, not the user's to edit)
                key = ".".join(str(k) for k in issue.path[:cut])
                how = f"inherited: set {key} in {file}{'' if issue.default_fails else ' (null drops it)'}"
                issue = replace(issue, suggestion=f"{issue.suggestion}; {how}" if issue.suggestion else how)
            return issue.located(doc.file, line, col, doc.snippet(line, col))
    return replace(issue, file=file)


def resolve_source(source: str) -> FsPath:
    """A file path, or the name of a shipped profile."""
    path = FsPath(source)
    if path.exists() or path.suffix in (".yaml", ".yml") or "/" in source:
        return path
    return find_shipped(source) or path


def _merge(base: dict[str, Any], over: dict[str, Any], at: Path = ()) -> dict[str, Any]:
    """`over` on `base`: mappings merge, anything else replaces (a table like `speculative.schedule` is one value),
    and `key: null` on a key that cannot be null drops the inherited value, at any depth (a child switching the
    mechanism drops its parent's options)."""
    merged = dict(base)
    for key, value in over.items():
        if value is None and overrides.null_drops((*at, key)):
            merged.pop(key, None)
            continue
        if isinstance(value, dict) and not overrides.is_table((*at, key)):
            inherited = merged.get(key)
            value = _merge(inherited if isinstance(inherited, dict) else {}, value, (*at, key))
        merged[key] = value
    return merged


def _origins(docs: list[Document]) -> Origins:
    """Where each value comes from: a later document's key hides what an earlier one had under it, unless both
    are mappings that merge (not tables); a child's `key: null` that drops the value leaves it to its default."""
    origins: Origins = {}
    for index, doc in enumerate(docs):
        marks = dict(doc.marks)
        for key in doc.marks:
            value = _value_at(doc.data, key)
            dropped = index > 0 and value is None and overrides.null_drops(key)
            if dropped or not isinstance(value, dict) or (index > 0 and overrides.is_table(key)):
                for hidden in [p for p in origins if len(p) > len(key) and p[: len(key)] == key]:
                    del origins[hidden]
            if dropped:
                origins.pop(key, None)
                del marks[key]
        origins.update({key: (doc, line, col) for key, (line, col) in marks.items()})
    return origins


def _typed(origins: Origins, path: Path) -> str | None:
    """What the file that gave the value at `path` had typed there (None for --set, a string or a mapping)."""
    doc = origins.get(path, (None, 0, 0))[0]
    return doc.typed.get(path) if doc is not None else None


def _value_at(data: Any, path: Path) -> Any:
    for part in path:
        if isinstance(data, dict):
            data = data.get(part)
        elif isinstance(data, list) and isinstance(part, int) and part < len(data):
            data = data[part]
        else:
            return None
    return data


def _load_chain(
    path: FsPath, seen: list[FsPath], issues: list[Issue], child: Issue | None = None
) -> tuple[dict[str, Any], list[Document]]:
    """Data of `path` merged over its `extends` ancestors, and the documents in merge order. `child` locates
    the `extends` that named `path`: an ancestor outside the first profile's folder (not shipped) or one that is
    not a profile never has its content shown (`extends: /etc/shadow` printed the file's lines)."""
    trusted = child is None or _real(path).is_relative_to(seen[0].parent) or _is_shipped(path)
    doc, found = load_document(path, show_lines=trusted)
    issues.extend(found)
    if doc is None:
        return {}, []
    if child is not None and not trusted and not set(doc.data) <= _sections():
        issues.append(
            replace(child, message=f"extends '{path}': not a profile (its top-level keys are not profile sections)")
        )
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
    resolved = _real(parent)
    if resolved in seen:
        cycle = " -> ".join(str(p) for p in [*seen, resolved])
        issues.append(replace(located, message=f"extends cycle: {cycle}"))
        return doc.data, [doc]
    if len(seen) >= MAX_EXTENDS_DEPTH:
        issues.append(replace(located, message=f"extends chain deeper than {MAX_EXTENDS_DEPTH}"))
        return doc.data, [doc]
    missing = _unreadable(parent, parent_ref, path.parent)
    if missing:
        issues.append(replace(located, message=missing[0], suggestion=missing[1]))
        return doc.data, [doc]
    if parent.suffix not in PROFILE_SUFFIXES:
        issues.append(
            replace(
                located,
                message=f"extends '{parent_ref}': not a profile (a .yaml or .yml file, or a shipped profile name)",
            )
        )
        return doc.data, [doc]
    base, docs = _load_chain(parent, [*seen, resolved], issues, located)
    return _merge(base, doc.data), [*docs, doc]


def _extends_hint(ref: str, folder: FsPath, *, from_here: bool = False) -> str:
    """The closest shipped profile name or sibling file (by its path from the current folder when `from_here`, as
    a command names it; else by its name in `folder`, as `extends` does), else where names come from."""
    stem = FsPath(ref).stem if ref.endswith((".yaml", ".yml")) else ref
    names = {p.stem: str(p) if from_here else p.name for p in folder.glob("*.y*ml")} if folder.is_dir() else {}
    names.update({name: name for name in shipped_profiles()})
    close = get_close_matches(stem, list(names), n=1)
    return f"did you mean '{names[close[0]]}'?" if close else "a file path, or a name from `specdeploy profiles list`"


def load_profile(source: str, sets: tuple[str, ...] = ()) -> LoadedProfile:
    """Load, merge, override and validate; raise ProfileError with every located issue."""
    path = resolve_source(source)
    issues: list[Issue] = []
    data, docs = _load_chain(path, [_real(path)], issues)
    origins = _origins(docs)
    _apply_sets(sets, data, origins, issues)
    if not docs and issues and issues[0].message == "file not found":  # a shipped profile's name misspelt?
        issues[0] = replace(issues[0], suggestion=_extends_hint(source, path.parent, from_here=True))
    if not docs or any(i.path == ("extends",) for i in issues):
        raise ProfileError(issues)  # without its parent the profile's other errors would be noise ("Field required")
    name_problem = check_name(path.stem)
    if name_problem:
        issues.append(Issue((), name_problem, "rename the profile file", file=str(path)))
    raw_spec = data.get("speculative")
    mechanism, name_issues = _mechanism_of(raw_spec if isinstance(raw_spec, dict) else {})
    name_issues += gpu_issues(data.get("hardware"))
    profile, options, schema_issues, option_issues = validate_models(data, mechanism, lambda at: _typed(origins, at))
    issues[:0] = schema_issues
    option_issues[:0] = name_issues
    if issues or profile is None:  # the profile is None exactly when it has schema issues
        issues.extend(option_issues)
        located = [_locate(i, origins, str(path)) if i.file is None else i for i in issues]
        raise ProfileError(
            _capped(sorted(located, key=lambda i: (i.file != "--set", i.file or "", i.line or 0, i.col or 0)))
        )
    loaded = LoadedProfile(path.stem, str(path), profile, mechanism, options, origins, [d.file for d in docs])
    loaded.pending = [loaded.locate(i) for i in option_issues]
    return loaded


def _apply_sets(sets: tuple[str, ...], data: dict[str, Any], origins: Origins, issues: list[Issue]) -> None:
    """Apply each `--set` in order, its value's origin `--set` (a dropped key's: its default)."""
    for text in sets:
        key, value, problem = overrides.parse_override(text)
        if problem:
            issues.append(problem)
            continue
        given = overrides.apply(data, key, value)
        for stale in [p for p in origins if p[: len(key)] == key]:  # the file's marks inside what --set replaced
            del origins[stale]
        if given:  # every key inside a mapping it gave (`--set tune.sla={p99_itl_ms: 20}`), none it did not
            origins.update({at: (None, 0, 0) for at in _paths_in(value, key)})


def _paths_in(value: Any, at: Path) -> Iterator[Path]:
    yield at
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        yield from _paths_in(item, (*at, key))


def check_name(name: str) -> str | None:
    """Why `name` (a profile file's stem, which names its artifact folder) is unsafe as a folder name, or None:
    `Path('...yaml').stem` is '..', and a build of it wrote outside --out."""
    if SAFE_NAME.fullmatch(name) and ".." not in name:
        return None
    return (
        f"the profile's name {name!r} (its file name) is not a safe artifact folder name: use letters, "
        "digits, '.', '_', '+' or '-', starting with a letter or digit"
    )


def _sections() -> set[str]:
    return {"extends", *Profile.model_fields}


def _is_shipped(path: FsPath) -> bool:
    return _real(path).is_relative_to(_real(data_dir("profiles")))


def _unreadable(parent: FsPath, ref: str, folder: FsPath) -> tuple[str, str] | None:
    """Why `extends: ref` names no file (a message and a hint), or None: a symlink loop is said so, not "no such
    file" with a did-you-mean naming the link itself."""
    try:
        parent.stat()
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return f"extends '{ref}': a symlink loop (a link that leads back to itself)", "point the link at a file"
        return f"extends '{ref}': no such file or shipped profile", _extends_hint(ref, folder)
    return None


def _real(path: FsPath) -> FsPath:
    """The canonical path, without raising on a symlink loop (the read reports it)."""
    return FsPath(os.path.realpath(path))


def _capped(issues: list[Issue]) -> list[Issue]:
    if len(issues) <= MAX_REPORTED:
        return issues
    more = len(issues) - MAX_REPORTED
    return [
        *issues[:MAX_REPORTED],
        Issue(
            (),
            f"... and {more} more error{'s' if more > 1 else ''} not shown "
            f"(only the first {MAX_REPORTED} are reported)",
            file=issues[0].file,
        ),
    ]


def _mechanism_of(raw: dict[str, Any]) -> tuple[Mechanism | None, list[Issue]]:
    """The named mechanism's plugin, or the issue with its name (options are checked with the schema)."""
    name, options = raw.get("mechanism", "none"), raw.get("options") or {}
    if not isinstance(name, str):
        return None, []  # the schema reports the type error
    if name in ("none", "auto"):
        return None, [Issue(("speculative", "options"), f"mechanism '{name}' takes no options")] if options else []
    try:
        return get_mechanism(name), []
    except UsageError as exc:
        return None, [Issue(("speculative", "mechanism"), exc.message, exc.hint)]
