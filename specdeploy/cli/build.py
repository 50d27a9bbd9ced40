"""build, verify."""

from __future__ import annotations

from pathlib import Path

import click

from specdeploy import api
from specdeploy.cli._group import command, profile_argument, set_option
from specdeploy.console import console
from specdeploy.errors import StepFailed
from specdeploy.execute.build import summary
from specdeploy.execute.manifest import DriftFound
from specdeploy.execute.runner import BuildResult
from specdeploy.execute.verify import drift_line
from specdeploy.plan.model import Plan
from specdeploy.plan.text import plan_text
from specdeploy.resolve.resolved import Resolved


def _show_plan(resolved: Resolved, the_plan: Plan, files: dict[str, str], selected: list[str]) -> None:
    text = plan_text(resolved, the_plan) + "".join(
        f"\n\n--- {name} (would be written) ---\n{body.rstrip()}" for name, body in files.items()
    )
    if len(selected) < len(the_plan.steps):  # --only / --from
        text += f"\n\nruns only: {', '.join(selected) or 'nothing'}"
    console().data({**the_plan.to_dict(), "files": files, "selected": selected}, text=text)


def _show_build(result: BuildResult) -> None:
    data = summary(result)
    failed = [s for s in result.steps if s.status == "failed"]
    text = "\n".join(
        [
            f"{'ok' if result.ok else 'FAILED'}: {result.artifact_dir} ({result.duration_s:.2f} s)",
            *(f"{s.id} failed:\n  {s.reason}" for s in failed),
            *(f"problem: {p} (`verify` would refuse the folder)" for p in result.problems),
        ]
    )
    console().data(data, text=text)


@command()
@profile_argument()
@set_option
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=Path("artifacts"),
    show_default=True,
    help="Artifacts root; the build writes OUT/<profile name>/.",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Print the plan, the files the emit step would write, the steps --only/--from select; run nothing.",
)
@click.option("--only", multiple=True, metavar="STEP", help="Run only this step id or stage (repeatable).")
@click.option("--from", "start", metavar="STEP", help="Start at this step id or stage (earlier steps: from stamps).")
@click.option("--keep-going", is_flag=True, help="After a failure, still run steps that do not depend on it.")
@click.option("--tune", is_flag=True, help="Run the tune step even if its result is cached.")
@click.option(
    "--lock-timeout",
    type=click.FloatRange(min=0),
    default=None,
    metavar="S",
    help="Give up after S seconds if another build of this profile holds the lock (default: wait).",
)
def build(
    profile: str,
    sets: tuple[str, ...],
    out: Path,
    dry_run: bool,
    only: tuple[str, ...],
    start: str | None,
    keep_going: bool,
    tune: bool,
    lock_timeout: float | None,
) -> None:
    if dry_run:
        return _show_plan(*api.dry_run(profile, sets, only=only, start=start))
    result = api.build(
        profile,
        sets,
        out=out,
        only=only,
        start=start,
        keep_going=keep_going,
        tune=tune,
        lock_timeout=lock_timeout,
        report=console().info,
    )
    _show_build(result)
    if not result.ok:
        raise StepFailed(f"build of {profile} failed: see the steps above and {result.artifact_dir}/manifest.json")


@command()
@click.argument("artifact_dir", type=click.Path(path_type=Path))
def verify(artifact_dir: Path) -> None:
    report = api.verify(artifact_dir)
    lines = [f"drift: {drift_line(d)}" for d in report.drift] + [f"problem: {p}" for p in report.problems]
    console().data(report.to_dict(), text="\n".join(lines) or f"ok: {report.checked} files match the manifest")
    if not report.ok:
        raise DriftFound(
            f"{artifact_dir} fails verification: {len(report.drift)} files drifted, {len(report.problems)} problems"
        )
