"""The artifact folder's records: `manifest.json` (schema: specdeploy/schemas/manifest.v1.json) and
`specdeploy.lock` (pinned revisions, tuned results); `verify.py` checks them."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from specdeploy import __version__
from specdeploy._io import write_json_atomic
from specdeploy.errors import SpecdeployError
from specdeploy.execute.hashing import canonical_hash
from specdeploy.execute.needs import installed_trtllm
from specdeploy.execute.runner import BuildResult
from specdeploy.resolve.resolver import Resolved

SCHEMA_VERSION = 1
MANIFEST = "manifest.json"
LOCK = "specdeploy.lock"


class DriftFound(SpecdeployError):
    """`verify` found files that no longer match the manifest (exit 1)."""


def _models(result: BuildResult) -> dict[str, Any]:
    out = {}
    for step in result.steps:
        if step.id.startswith("fetch.") and step.outputs:
            out[step.id.split(".", 1)[1]] = step.outputs
    return out


def _stamped_files(artifact_dir: Path) -> dict[str, str]:
    files: dict[str, str] = {}
    for stamp in sorted((artifact_dir / ".specdeploy" / "steps").glob("*.json")):
        try:
            data = json.loads(stamp.read_text())
        except (OSError, ValueError):
            continue
        files.update({rel: rec[2] for rel, rec in data.get("files", {}).items()})
    return files


def profile_hash(resolved: Resolved) -> str:
    return canonical_hash(resolved.profile.model_dump(mode="json"))


def write_manifest(resolved: Resolved, result: BuildResult) -> dict[str, Any]:
    profile = resolved.profile
    data = {
        "schema_version": SCHEMA_VERSION,
        "generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "invocation_id": str(uuid.uuid4()),
        "specdeploy_version": __version__,
        "profile": {"name": resolved.loaded.name, "file": resolved.loaded.file, "hash": profile_hash(resolved),
                    "resolved": profile.model_dump(mode="json")},
        "facts": resolved.to_dict(),
        "models": _models(result),
        "trtllm": {"version": profile.runtime.trtllm_version if resolved.line else None,
                   "line": resolved.line.name if resolved.line else None, "installed": installed_trtllm()},
        "gpu": {"name": resolved.gpu.name, "arch": resolved.gpu.sm_arch} if resolved.gpu else None,
        "backend": profile.runtime.backend,
        "ok": result.ok,
        "started_at": result.started_at,
        "duration_s": result.duration_s,
        "steps": [s.to_dict() for s in result.steps],
        "files": _stamped_files(result.artifact_dir),
    }
    _write_public(result.artifact_dir / MANIFEST, data)
    return data


def read_lock(artifact_dir: Path) -> dict[str, Any]:
    try:
        data = json.loads((artifact_dir / LOCK).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_lock(resolved: Resolved, result: BuildResult) -> dict[str, Any]:
    """Pinned revisions of this build; tuned results already in the lock (or from the tune step) are kept."""
    lock = read_lock(result.artifact_dir)
    models = {role: {k: out.get(k) for k in ("ref", "kind", "revision", "requested_revision") if k in out}
              for role, out in _models(result).items()}
    lock.update({"schema_version": SCHEMA_VERSION, "profile": resolved.loaded.name, "profile_hash":
                 profile_hash(resolved), "trtllm_version": resolved.profile.runtime.trtllm_version,
                 "models": {**lock.get("models", {}), **models}})
    tuned = next((s.outputs for s in result.steps if s.stage == "tune" and s.outputs), None)
    if tuned:
        lock["tuned"] = tuned
    _write_public(result.artifact_dir / LOCK, lock)
    return lock


def _write_public(path: Path, data: dict[str, Any]) -> None:
    write_json_atomic(path, data)
    path.chmod(0o644)  # the temp file behind the atomic write is 0600


def update_lock(artifact_dir: str | Path, *, tuned: dict[str, Any]) -> dict[str, Any]:
    """Record tuned results (JSON-able, e.g. {"draft_len": 3, "schedule": {1: 4, 8: 2}, ...}) in specdeploy.lock."""
    folder = Path(artifact_dir)
    json.dumps(tuned)
    lock = read_lock(folder)
    lock.setdefault("schema_version", SCHEMA_VERSION)
    lock["tuned"] = {**lock.get("tuned", {}), **tuned,
                     "updated_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    _write_public(folder / LOCK, lock)
    return lock
