"""What an artifact folder records for its profile, for the commands that write into it beside `build`: a
standalone `render` uses the build's outputs (the fetched checkpoints, the tuned schedule), so it writes what the
build's own render step wrote."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from specdeploy.errors import UsageError
from specdeploy.execute.manifest import MANIFEST, TUNE_RESULT, lock_record, profile_hash
from specdeploy.execute.portable import expand
from specdeploy.plan.model import TUNE_STEP
from specdeploy.resolve.resolved import Resolved


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text()) if path.is_file() else None
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def recorded_outputs(resolved: Resolved, folder: Path) -> tuple[dict[str, dict[str, Any]], str | None]:
    """(step id -> outputs, a note): from the folder's manifest when it records a build of this very profile, else
    the tune result of this profile there; ({}, why) when neither belongs to it."""
    from specdeploy.execute.actions import code_hash

    wanted = profile_hash(resolved)
    manifest = _read(folder / MANIFEST)
    if manifest and isinstance(manifest.get("profile"), dict) and manifest["profile"].get("hash") == wanted:
        outputs = {
            str(s.get("id")): dict(s.get("outputs") or {}) for s in manifest.get("steps", []) if isinstance(s, dict)
        }
        for step_id, out in outputs.items():
            if step_id.startswith("fetch.") and isinstance(out.get("path"), str):
                out["path"] = str(expand(out["path"], folder))  # the manifest's paths are portable
        return outputs, f"from the build recorded in {folder / MANIFEST}"
    tuned = _read(folder / TUNE_RESULT)
    if tuned and tuned.get("profile_hash") == wanted and tuned.get("code") == code_hash("tune"):
        return {TUNE_STEP: lock_record(tuned, str(TUNE_RESULT))}, f"the tuned schedule of {folder / TUNE_RESULT}"
    if manifest or tuned:
        return {}, (
            f"{folder} holds a build or tune of another version of this profile (other values or --set): "
            "its tuned schedule is not used"
        )
    return {}, None


def refuse_folder(out: Path, what: str) -> None:
    """`--out` once named the repository folder itself for `render`: a Triton repository or a `triton`/`deploy`
    folder passed as OUT is that old usage, refused with the new one."""
    old = ("triton", "deploy")  # the repository folder, or the old defaults triton/<profile>, deploy/<profile>
    looks = (out / "specdeploy-repo.json").exists() or out.name in old or out.parent.name in old
    if looks:
        raise UsageError(
            f"--out {out} looks like the {what} folder itself: --out is the artifacts root, as for "
            f"`build` and `tune` (render writes OUT/<profile name>/{what})",
            hint=f"pass the folder that holds the artifact folders, e.g. --out {out.parent.parent}",
        )


@contextmanager
def artifact_for(resolved: Resolved, out: Path, what: str, *, pretend: bool = False) -> Iterator[Path]:
    """`out/<profile>` for a command that writes `what` into it (render: `triton`, `deploy`), checked as `build`
    checks it and held under its lock unless only pretending."""
    from specdeploy.execute.artifact import artifact_folder, artifact_lock, check_folder

    refuse_folder(out, what)
    name = resolved.loaded.name
    folder = check_folder(out, name)
    if pretend:
        yield folder
        return
    folder = artifact_folder(out, name)
    with artifact_lock(folder, name):
        yield folder
