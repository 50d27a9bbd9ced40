"""The artifact folder's records: `manifest.json` (schema: specdeploy/schemas/manifest.v2.json),
`specdeploy.lock` (pinned revisions, tuned results) and where the tune's result lies; `verify.py` checks them."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from specdeploy import __version__
from specdeploy._io import write_json_atomic
from specdeploy.boundedio import read_json
from specdeploy.errors import SpecdeployError
from specdeploy.execute.hashing import canonical_hash, sha256_file
from specdeploy.execute.needs import installed_trtllm
from specdeploy.execute.portable import portable, profile_ref
from specdeploy.execute.runner import BuildResult, stamped_files
from specdeploy.resolve.resolved import Resolved

SCHEMA_VERSION = 2
"""2: run metadata (timestamps, invocation id, statuses, logs) moved to `.specdeploy/run.json`; paths portable."""
MANIFEST = "manifest.json"
LOCK = "specdeploy.lock"
RUN = Path(".specdeploy") / "run.json"
TUNE_RESULT = Path("tune") / "result.json"
"""The tune's full result (`specdeploy tune`, the build's tune step); the lock keeps `lock_record` of it."""
GITIGNORE = ".gitignore"
GITIGNORE_TEXT = (
    "# Written by specdeploy: .specdeploy/ is this host's build state (stamps, logs, checkpoints, run\n"
    "# metadata); everything else is the deployable artifact, identical when an unchanged profile is\n"
    "# rebuilt.\n.specdeploy/\n"
)


class DriftFound(SpecdeployError):
    """`verify` found files that no longer match the manifest (exit 1)."""


def _models(result: BuildResult) -> dict[str, Any]:
    out = {}
    for step in result.steps:
        if step.id.startswith("fetch.") and step.outputs:
            out[step.id.split(".", 1)[1]] = step.outputs
    return out


def profile_hash(resolved: Resolved) -> str:
    return canonical_hash(resolved.profile.model_dump(mode="json"))


def write_manifest(resolved: Resolved, result: BuildResult) -> dict[str, Any]:
    """manifest.json holds content only (a rebuild of an unchanged profile writes the same bytes), with paths
    relative to the artifact or under ${HF_HUB_CACHE}; this run's metadata goes to `.specdeploy/run.json`."""
    profile, art = resolved.profile, result.artifact_dir
    gitignore = art / GITIGNORE
    if not gitignore.exists():
        gitignore.write_text(GITIGNORE_TEXT)
    data = {
        "schema_version": SCHEMA_VERSION,
        "specdeploy_version": __version__,
        "profile": {
            "name": resolved.loaded.name,
            "file": profile_ref(resolved, art),
            "hash": profile_hash(resolved),
            "resolved": profile.model_dump(mode="json"),
        },
        "facts": resolved.to_dict(),
        "models": _models(result),
        "trtllm": {
            "version": profile.runtime.trtllm_version if resolved.line else None,
            "line": resolved.line.name if resolved.line else None,
            "installed": installed_trtllm(),
        },
        "gpu": {"name": resolved.gpu.name, "arch": resolved.gpu.sm_arch} if resolved.gpu else None,
        "backend": profile.runtime.backend,
        "ok": result.ok,
        "steps": [{"id": s.id, "stage": s.stage, "key": s.key, "outputs": s.outputs} for s in result.steps],
        "files": {**stamped_files(art), GITIGNORE: sha256_file(gitignore)},
    }
    file = resolved.loaded.file
    data = portable(data, art, {str(Path(file).resolve()): profile_ref(resolved, art)} if file else None)
    _write_public(art / MANIFEST, data)
    _write_public(
        art / RUN,
        {
            "schema_version": SCHEMA_VERSION,
            "generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "invocation_id": str(uuid.uuid4()),
            "started_at": result.started_at,
            "duration_s": result.duration_s,
            "ok": result.ok,
            "problems": result.problems,
            "steps": [{k: v for k, v in s.to_dict().items() if k != "outputs"} for s in result.steps],
        },
    )
    return data


def read_lock(artifact_dir: Path) -> dict[str, Any]:
    try:
        data = read_json(artifact_dir / LOCK)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_lock(resolved: Resolved, result: BuildResult) -> dict[str, Any]:
    """Pinned revisions of this build; tuned results already in the lock (or from the tune step) are kept."""
    lock = read_lock(result.artifact_dir)
    models = {
        role: {k: out.get(k) for k in ("ref", "kind", "revision", "requested_revision") if k in out}
        for role, out in _models(result).items()
    }
    lock.update(
        {
            "schema_version": SCHEMA_VERSION,
            "profile": resolved.loaded.name,
            "profile_hash": profile_hash(resolved),
            "trtllm_version": resolved.profile.runtime.trtllm_version,
            "models": {**lock.get("models", {}), **models},
        }
    )
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
    json.dumps(tuned, allow_nan=False)
    lock = read_lock(folder)
    lock.setdefault("schema_version", SCHEMA_VERSION)
    lock["tuned"] = {k: v for k, v in {**lock.get("tuned", {}), **tuned}.items() if k != "updated_at"}
    _write_public(folder / LOCK, lock)
    return lock


def lock_record(result: Mapping[str, Any], result_path: str) -> dict[str, Any]:
    """What `specdeploy.lock` keeps under `tuned` (the full result stays in tune/result.json)."""
    sched = result["schedule"]
    return {
        "format": result["format"],
        "backend": result["backend"],
        "evidence": result.get("evidence", "measured"),
        "strategy": result["strategy"],
        "draft_len": sched["draft_len"],
        "schedule": sched["schedule"],
        "ranges": sched["ranges"],
        "max_concurrency": sched["max_concurrency"],
        "emitted": sched["emitted"],
        "notes": sched.get("notes", []),
        "clamped": sched.get("clamped", {}),
        "confidence": result["confidence"]["level"],
        "result": result_path,
    }
