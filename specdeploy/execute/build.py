"""build(): one locked run of a Plan into `OUT/<profile>/`, then the manifest and the lock file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from specdeploy.errors import SpecdeployError
from specdeploy.execute.manifest import write_lock, write_manifest
from specdeploy.execute.needs import check_needs
from specdeploy.execute.runner import BuildResult, NeedsChecker, Runner, select
from specdeploy.plan.model import Plan
from specdeploy.resolve.resolver import Resolved


class BuildLocked(SpecdeployError):
    """Another build holds this artifact folder's lock (exit 1)."""


def run_build(plan: Plan, resolved: Resolved, out: Path, *, only: tuple[str, ...] = (), start: str | None = None,
              keep_going: bool = False, force: tuple[str, ...] = (), lock_timeout: float | None = None,
              needs: NeedsChecker = check_needs, report: Callable[[str], None] = lambda _: None) -> BuildResult:
    """Select, run and record. `lock_timeout` None waits forever; a second build of the same profile waits."""
    from filelock import FileLock, Timeout

    selected = select(plan, only, start)
    artifact_dir = (out / plan.profile_name).resolve()
    (artifact_dir / ".specdeploy").mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(artifact_dir / ".specdeploy" / "build.lock"))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        report(f"waiting for another build of {plan.profile_name} to finish (lock {lock.lock_file})"
               + (f", up to {lock_timeout:g} s" if lock_timeout is not None else ""))
        try:
            lock.acquire(timeout=-1 if lock_timeout is None else lock_timeout)
        except Timeout:
            raise BuildLocked(f"another build of {plan.profile_name} still holds {lock.lock_file} after "
                              f"{lock_timeout:g} s", hint="wait for it, or raise --lock-timeout") from None
    try:
        runner = Runner(plan, resolved, artifact_dir, keep_going=keep_going, force=force, needs=needs, report=report)
        result = runner.run(selected)
        write_manifest(resolved, result)
        write_lock(resolved, result)
    finally:
        lock.release()
    return result


def summary(result: BuildResult) -> dict[str, Any]:
    """The machine-readable summary `build --json` prints (for CI)."""
    return {"ok": result.ok, "artifact_dir": str(result.artifact_dir), "duration_s": result.duration_s,
            "manifest": str(result.artifact_dir / "manifest.json"),
            "steps": [{k: v for k, v in s.to_dict().items() if k != "outputs"} for s in result.steps]}
