"""build, verify."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from specdeploy.cli._group import cli, profile_argument, set_option
from specdeploy.console import console
from specdeploy.errors import StepFailed


def _show_plan(resolved: Any, the_plan: Any, files: dict[str, str], selected: list[str]) -> None:
    from specdeploy.plan.text import plan_text

    text = plan_text(resolved, the_plan) + "".join(f"\n\n--- {name} (would be written) ---\n{body.rstrip()}"
                                                  for name, body in files.items())
    if len(selected) < len(the_plan.steps):  # --only / --from
        text += f"\n\nruns only: {', '.join(selected) or 'nothing'}"
    console().data({**the_plan.to_dict(), "files": files, "selected": selected}, text=text)


def _show_build(result: Any) -> None:
    from specdeploy.execute.build import summary

    data = summary(result)
    failed = [s for s in result.steps if s.status == "failed"]
    text = "\n".join([f"{'ok' if result.ok else 'FAILED'}: {result.artifact_dir} ({result.duration_s:.2f} s)",
                      *(f"{s.id} failed:\n  {s.reason}" for s in failed),
                      *(f"problem: {p} (`verify` would refuse the folder)" for p in result.problems)])
    console().data(data, text=text)


@cli.command()
@profile_argument()
@set_option
@click.option("--out", type=click.Path(path_type=Path), default=Path("artifacts"), show_default=True,
              help="Artifacts root; the build writes OUT/<profile name>/.")
@click.option("--dry-run", is_flag=True,
              help="Print the plan, the files the emit step would write, the steps --only/--from select; run nothing.")
@click.option("--only", multiple=True, metavar="STEP", help="Run only this step id or stage (repeatable).")
@click.option("--from", "start", metavar="STEP", help="Start at this step id or stage (earlier steps: from stamps).")
@click.option("--keep-going", is_flag=True, help="After a failure, still run steps that do not depend on it.")
@click.option("--tune", is_flag=True, help="Run the tune step even if its result is cached.")
@click.option("--lock-timeout", type=click.FloatRange(min=0), default=None, metavar="S",
              help="Give up after S seconds if another build of this profile holds the lock (default: wait).")
def build(profile: str, sets: tuple[str, ...], out: Path, dry_run: bool, only: tuple[str, ...], start: str | None,
          keep_going: bool, tune: bool, lock_timeout: float | None) -> None:
    """Build PROFILE into OUT/<name>/: fetch, emit or compile, render; cached steps are reused."""
    from specdeploy import api
    if dry_run:
        return _show_plan(*api.dry_run(profile, sets, only=only, start=start))
    result = api.build(profile, sets, out=out, only=only, start=start, keep_going=keep_going, tune=tune,
                       lock_timeout=lock_timeout, report=console().info)
    _show_build(result)
    if not result.ok:
        raise StepFailed(f"build of {profile} failed: see the steps above and {result.artifact_dir}/manifest.json")


@cli.command()
@click.argument("artifact_dir", type=click.Path(path_type=Path))
def verify(artifact_dir: Path) -> None:
    """Check ARTIFACT_DIR against its manifest: a successful build, every file as recorded and none unlisted, a
    lock that matches; exit 1 on any drift or problem."""
    from specdeploy import api
    from specdeploy.execute.manifest import DriftFound
    from specdeploy.execute.verify import drift_line

    report = api.verify(artifact_dir)
    lines = [f"drift: {drift_line(d)}" for d in report["drift"]]
    lines += [f"problem: {p}" for p in report["problems"]]
    console().data(report, text="\n".join(lines) or f"ok: {report['checked']} files match the manifest")
    if not report["ok"]:
        raise DriftFound(f"{artifact_dir} fails verification: {len(report['drift'])} files drifted, "
                         f"{len(report['problems'])} problems")
