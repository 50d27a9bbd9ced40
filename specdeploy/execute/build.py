"""build(): one locked run of a Plan into `OUT/<profile>/`, then the manifest and the lock file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from specdeploy.errors import StepFailed
from specdeploy.execute.artifact import artifact_folder, artifact_lock
from specdeploy.execute.hashing import HashCache
from specdeploy.execute.manifest import GITIGNORE, write_lock, write_manifest
from specdeploy.execute.needs import check_needs
from specdeploy.execute.runner import BuildResult, NeedsChecker, Runner, select, stamped_files
from specdeploy.plan.model import Plan
from specdeploy.resolve.resolved import Resolved


def run_build(
    plan: Plan,
    resolved: Resolved,
    out: Path,
    *,
    only: tuple[str, ...] = (),
    start: str | None = None,
    keep_going: bool = False,
    force: tuple[str, ...] = (),
    lock_timeout: float | None = None,
    needs: NeedsChecker = check_needs,
    report: Callable[[str], None] = lambda _: None,
) -> BuildResult:
    """Select, run and record. `lock_timeout` None waits forever; a second build (or tune) of the same profile
    waits."""
    selected = select(plan, only, start)
    artifact_dir = artifact_folder(out, plan.profile_name)
    with artifact_lock(artifact_dir, plan.profile_name, timeout=lock_timeout, report=report):
        runner = Runner(plan, resolved, artifact_dir, keep_going=keep_going, force=force, needs=needs, report=report)
        try:  # steps turn their own OSErrors into failed steps; this is the bookkeeping around them
            result = runner.run(selected)
            result.problems = unverified(artifact_dir, runner.cache)
            write_manifest(resolved, result)
            write_lock(resolved, result)
        except OSError as exc:
            raise StepFailed(
                f"could not write the build's records in {artifact_dir}: {exc.strerror or exc}",
                hint="is the disk full or the folder read-only?",
            ) from None
    return result


def unverified(artifact_dir: Path, cache: HashCache) -> list[str]:
    """What `verify` would find in the folder the steps left: a recorded file missing or changed (the hash cache
    answers for untouched files, so this costs no re-hash of engines), a file no step recorded."""
    from specdeploy.execute.verify import _unlisted, drift_line

    recorded = stamped_files(artifact_dir)
    problems = []
    for rel, digest in sorted(recorded.items()):
        path = artifact_dir / rel
        try:
            same = path.is_file() and cache.digest(path) == digest
        except OSError:
            same = False
        if not same:
            problems.append(f"{rel}: {'changed' if path.is_file() else 'missing'} since its step recorded it")
    problems += [
        drift_line(d) for d in _unlisted(artifact_dir, {*recorded, GITIGNORE}) if d["file"].split("/", 1)[0] != ".git"
    ]  # a committed artifact's repository is not content
    return problems


def summary(result: BuildResult) -> dict[str, Any]:
    """The machine-readable summary `build --json` prints (for CI)."""
    return {
        "schema_version": result.schema_version,
        "ok": result.ok,
        "artifact_dir": str(result.artifact_dir),
        "duration_s": result.duration_s,
        "problems": result.problems,
        "manifest": str(result.artifact_dir / "manifest.json"),
        "steps": [{k: v for k, v in s.to_dict().items() if k != "outputs"} for s in result.steps],
    }
