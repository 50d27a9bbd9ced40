"""`build` (and its `--dry-run`): a profile's plan run into an artifact folder; `verify`: that folder's integrity."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from specdeploy.api.profiles import load_and_resolve
from specdeploy.errors import UsageError

if TYPE_CHECKING:
    from specdeploy.execute.runner import BuildResult
    from specdeploy.execute.verify import VerifyReport
    from specdeploy.plan.model import Plan
    from specdeploy.resolve.resolved import Resolved


def dry_run(
    source: str, sets: tuple[str, ...] = (), *, only: tuple[str, ...] = (), start: str | None = None
) -> tuple[Resolved, Plan, dict[str, str], list[str]]:
    """What `build --dry-run` shows: the plan, the text of the files the emit step would write (the LLM-API
    YAML, serve.sh) and the steps `--only`/`--from` select (refused as the build refuses them); nothing written,
    nothing fetched."""
    from specdeploy.execute.runner import select
    from specdeploy.plan.planner import make_plan
    from specdeploy.plugin.registry import get_engine

    resolved = load_and_resolve(source, sets)
    the_plan = make_plan(resolved)
    chosen = select(the_plan, only, start)
    preview = get_engine(resolved.profile.runtime.backend).preview(resolved)
    return resolved, the_plan, preview, [s.id for s in the_plan.steps if s.id in chosen]


def build(
    source: str,
    sets: tuple[str, ...] = (),
    *,
    out: Path = Path("artifacts"),
    only: tuple[str, ...] = (),
    start: str | None = None,
    keep_going: bool = False,
    tune: bool = False,
    lock_timeout: float | None = None,
    report: Callable[[str], None] | None = None,
) -> BuildResult:
    """Run a profile's plan into `out/<profile>/` (cached steps reused); `report` hears each step's progress."""
    from specdeploy.execute.artifact import check_folder
    from specdeploy.execute.build import run_build
    from specdeploy.execute.runner import select
    from specdeploy.plan.planner import make_plan

    offline = load_and_resolve(source, sets)  # profile, --only/--from and --out refused before the hub is asked
    select(make_plan(offline), only, start)  # the steps are the profile's; only their arguments need the model
    check_folder(out, offline.loaded.name)
    resolved = load_and_resolve(source, sets, online=True)
    from specdeploy.plugin.registry import get_engine

    get_engine(resolved.profile.runtime.backend).check_installed(resolved)  # the pinned release is the installed one
    the_plan = make_plan(resolved)
    force = tuple(s.id for s in the_plan.steps if s.stage.value == "tune") if tune else ()
    if tune and not force:
        raise UsageError(
            "--tune: this profile has no tune step (draft_len is fixed or a schedule is given)",
            hint="set speculative.draft_len: auto and drop speculative.schedule",
        )
    return run_build(
        the_plan,
        resolved,
        out,
        only=only,
        start=start,
        keep_going=keep_going,
        force=force,
        lock_timeout=lock_timeout,
        report=report or (lambda _: None),
    )


def verify(artifact_dir: Path) -> VerifyReport:
    """The artifact folder's integrity: a valid manifest of a build that succeeded, every file as recorded and
    none unlisted, a lock that belongs to it; lists drift and problems."""
    from specdeploy.execute.verify import verify as verify_artifacts

    return verify_artifacts(artifact_dir)
