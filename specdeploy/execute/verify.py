"""`specdeploy verify`: an integrity gate for an artifact folder, not only a re-hash.

The manifest must match its schema and record a build that succeeded; every recorded checkpoint and output
file must hash as recorded; any file the manifest does not list is drift (a model folder planted in
`triton/` would otherwise be served); the lock must belong to this build, and its tuned schedule must be the
one the LLM-API YAML carries.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, ClassVar

from specdeploy.boundedio import InputError, read_json, read_yaml, walk
from specdeploy.errors import UsageError
from specdeploy.execute.hashing import HashCache
from specdeploy.execute.manifest import LOCK, MANIFEST, RUN
from specdeploy.execute.portable import expand

INTERNAL = ".specdeploy"  # logs, stamps, locks, serve state: the tool's own bookkeeping, not the artifact
_JSON_TYPES: dict[str, type | tuple[type, ...]] = {
    "object": dict,
    "array": list,
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
    "null": type(None),
}


@dataclass(frozen=True)
class VerifyReport:
    """What `verify` found in an artifact folder: files that drifted from the manifest and other problems."""

    schema_version: ClassVar[int] = 1
    artifact_dir: Path
    checked: int
    """Files hashed against the manifest."""
    drift: list[dict[str, str]]
    """One record per file that differs (`drift_line` says it): file, path, expected, actual."""
    problems: list[str]

    @property
    def ok(self) -> bool:
        """The manifest is valid, the build succeeded and nothing drifted."""
        return not self.drift and not self.problems

    def to_dict(self) -> dict[str, object]:
        return {
            "schema_version": self.schema_version,
            "artifact_dir": str(self.artifact_dir),
            "checked": self.checked,
            "drift": self.drift,
            "problems": self.problems,
            "ok": self.ok,
        }


def schema_errors(value: Any, schema: dict[str, Any], path: str = "$") -> list[str]:  # noqa: C901
    """`value` against the subset of JSON Schema the manifest schema uses (type, enum, required, properties,
    additionalProperties, items): one line per problem, with its JSON path."""
    kinds = schema.get("type")
    if kinds:
        names = kinds if isinstance(kinds, list) else [kinds]
        if not any(
            isinstance(value, _JSON_TYPES[n]) and not (n in ("integer", "number") and isinstance(value, bool))
            for n in names
        ):
            return [f"{path}: {value!r:.40} is not {' or '.join(names)}"]
    errors: list[str] = []
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {value!r:.40} is not one of {schema['enum']}")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        errors += [f"{path}: missing {k}" for k in schema.get("required", []) if k not in value]
        for key, item in value.items():
            if key in props:
                errors += schema_errors(item, props[key], f"{path}.{key}")
            elif schema.get("additionalProperties") is False:
                errors.append(f"{path}: unexpected {key}")
            elif isinstance(schema.get("additionalProperties"), dict):
                errors += schema_errors(item, schema["additionalProperties"], f"{path}.{key}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            errors += schema_errors(item, schema["items"], f"{path}[{i}]")
    return errors


def manifest_schema() -> dict[str, Any]:
    return dict(json.loads((Path(__file__).resolve().parent.parent / "schemas" / "manifest.v2.json").read_text()))


_ABSENT = object()


def _read_json(path: Path) -> Any:
    """The parsed file, `_ABSENT`, or the exception that kept it from being read (a FIFO is never read)."""
    try:
        return read_json(path)
    except FileNotFoundError:
        return _ABSENT
    except InputError as exc:
        return ValueError(exc.detail)
    except OSError as exc:
        return exc


def verify(artifact_dir: str | Path) -> VerifyReport:
    """Check an artifact folder; `ok` only when the manifest is valid, the build succeeded and nothing drifted."""
    folder = Path(artifact_dir)
    manifest = _read_json(folder / MANIFEST)
    if manifest is _ABSENT:
        raise UsageError(f"{folder} has no {MANIFEST}", hint="pass the folder `specdeploy build` wrote (DIR/<profile>)")
    if isinstance(manifest, Exception):
        raise UsageError(f"{folder / MANIFEST} is not readable JSON: {manifest}") from None
    problems = [f"{MANIFEST}: {e}" for e in schema_errors(manifest, manifest_schema())]
    if problems:  # nothing else in it can be trusted (or even read)
        return VerifyReport(folder, 0, [], problems)
    if not manifest["ok"]:
        run = _read_json(folder / RUN)  # the statuses are this host's run metadata, not the manifest's content
        steps = run.get("steps", []) if isinstance(run, dict) and isinstance(run.get("steps"), list) else []
        failed = [str(s.get("id")) for s in steps if isinstance(s, dict) and s.get("status") == "failed"]
        problems.append(f"{MANIFEST}: records a failed build (steps failed: {', '.join(failed) or 'unknown'})")
    outside = [
        f"{MANIFEST}: {label} {rel!r} is outside the artifact folder"
        for label, rel in _entries(manifest)
        if not _inside(rel)
    ]
    if outside:  # a build never records one: reading it would check (or serve) a file of someone else's choosing
        return VerifyReport(folder, 0, [], problems + outside)
    drift, checked = _hash_drift(folder, manifest)
    drift += _unlisted(folder, set(manifest["files"]))
    problems += lock_problems(folder, manifest)
    return VerifyReport(folder, checked, drift, problems)


def _entries(manifest: dict[str, Any]) -> list[tuple[str, str]]:
    """Every relative path the manifest records: the artifact's files and each model's files in its folder."""
    return [("files entry", rel) for rel in manifest["files"]] + [
        (f"models.{role} file", rel) for role, model in manifest["models"].items() for rel in model["files"]
    ]


def _inside(rel: str) -> bool:
    path = PurePosixPath(rel)
    return bool(path.parts) and not path.is_absolute() and ".." not in path.parts


def _linked(folder: Path, rel: str) -> bool:
    """Whether the file, or a folder on its way from the artifact folder, is a symbolic link."""
    path = folder
    for part in PurePosixPath(rel).parts:
        path = path / part
        if path.is_symlink():
            return True
    return False


def _hash_drift(folder: Path, manifest: dict[str, Any]) -> tuple[list[dict[str, str]], int]:
    cache = HashCache(None)
    expected: list[tuple[str, Path, str, bool]] = []
    for role, model in manifest["models"].items():  # checkpoints: a hub cache's files are links to its blobs
        base = expand(model["path"], folder)
        for rel, digest in model["files"].items():
            path = base if base.is_file() and rel == base.name else base / rel
            expected.append((f"{role}:{rel}", path, digest, False))
    expected += [(rel, folder / rel, digest, _linked(folder, rel)) for rel, digest in manifest["files"].items()]
    drift = []
    for label, path, digest, linked in expected:
        try:  # a FIFO or device in a recorded file's place would be read forever: only regular files are hashed
            actual = (
                "a symbolic link (the build wrote a file)"
                if linked
                else cache.digest(path, verify=True)
                if path.is_file() or not path.exists()
                else "not a regular file"
            )
        except OSError:
            actual = None
        if actual != digest:
            drift.append({"file": label, "path": str(path), "expected": digest, "actual": actual or "missing"})
    return drift, len(expected)


def drift_line(entry: dict[str, str]) -> str:
    """One drift record as a line: what it is and how it differs (digests shortened, other values whole)."""

    def short(value: str) -> str:
        return value[:12] if len(value) == 64 else value

    how = (
        "not listed in the manifest" + BYTECODE * _bytecode(entry["file"])
        if entry["actual"] == "unlisted"
        else f"expected {short(entry['expected'])}, now {short(entry['actual'])}"
    )
    return f"{entry['file']} ({entry['path']}): {how}"


BYTECODE = (
    ": Python bytecode, which an import runs instead of the listed source beside it when its header "
    "carries the source's mtime and size (a build writes none, `serve` never writes any)"
)


def _bytecode(rel: str) -> bool:
    return rel.endswith(".pyc") or "__pycache__" in PurePosixPath(rel).parts


def _unlisted(folder: Path, listed: set[str]) -> list[dict[str, str]]:
    """Every file (or link, fifo, ...) the manifest does not list, outside the tool's own bookkeeping."""
    drift = []
    for path in sorted(walk(folder)):
        rel = path.relative_to(folder).as_posix()
        if rel.split("/", 1)[0] == INTERNAL or rel in (MANIFEST, LOCK) or rel in listed:
            continue
        if path.is_dir() and not path.is_symlink():
            continue
        drift.append({"file": rel, "path": str(path), "expected": "not in the manifest", "actual": "unlisted"})
    return drift


def lock_problems(folder: Path, manifest: dict[str, Any]) -> list[str]:
    """The lock belongs to this build (profile, hash, model refs) and its tuned schedule is the YAML's."""
    lock = _read_json(folder / LOCK)
    if lock is _ABSENT:
        return [f"{LOCK}: missing"]
    if not isinstance(lock, dict):
        return [f"{LOCK}: not a JSON object ({lock})"]
    problems = []
    profile = manifest["profile"]
    if (lock.get("profile"), lock.get("profile_hash")) != (profile["name"], profile["hash"]):
        problems.append(
            f"{LOCK}: records profile {lock.get('profile')!r} hash {str(lock.get('profile_hash'))[:12]}, "
            f"the manifest {profile['name']!r} hash {profile['hash'][:12]}"
        )
    models = lock.get("models")
    for role, model in manifest["models"].items():
        pinned = models.get(role) if isinstance(models, dict) else None
        pinned = pinned if isinstance(pinned, dict) else {}
        if (pinned.get("ref"), pinned.get("revision")) != (model["ref"], model["revision"]):
            problems.append(
                f"{LOCK}: models.{role} pins {pinned.get('ref')!r}@{pinned.get('revision')}, the "
                f"build fetched {model['ref']!r}@{model['revision']}"
            )
    return problems + _schedule_problems(folder, lock.get("tuned"))


def _schedule_problems(folder: Path, tuned: Any) -> list[str]:
    options = folder / "llm_api_options.yaml"
    if tuned is None or not options.is_file():
        return []
    try:
        spec = (read_yaml(options) or {}).get("speculative_config") or {}
    except InputError as exc:
        return [f"{options.name}: unreadable ({exc.detail})"]
    except (OSError, AttributeError) as exc:
        return [f"{options.name}: unreadable ({exc})"]
    emitted = tuned.get("emitted") if isinstance(tuned, dict) else "?"
    if emitted is None:
        return [] if not spec else [f"{LOCK}: the tune turned speculation off, {options.name} speculates"]
    if not isinstance(emitted, dict):
        return [f"{LOCK}: tuned.emitted is not a schedule record"]
    want = {str(k): v for k, v in (emitted.get("draft_len_schedule") or {}).items()}
    have = {str(k): v for k, v in (spec.get("draft_len_schedule") or {}).items()}
    problems = []
    if want != have:
        problems.append(f"{LOCK}: tuned draft_len_schedule {want} but {options.name} carries {have or 'none'}")
    if emitted.get("max_concurrency") != spec.get("max_concurrency"):
        problems.append(
            f"{LOCK}: tuned max_concurrency {emitted.get('max_concurrency')} but {options.name} "
            f"carries {spec.get('max_concurrency')}"
        )
    return problems
