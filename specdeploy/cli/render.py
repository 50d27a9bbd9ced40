"""render, check-repo: Triton model repositories."""

from __future__ import annotations

from pathlib import Path

import click

from specdeploy.cli._group import cli, profile_argument, set_option
from specdeploy.console import console
from specdeploy.errors import StepFailed


@cli.command()
@profile_argument()
@click.option("--out", type=click.Path(path_type=Path), default=Path("artifacts"), show_default=True,
              help="Artifacts root, as for build and tune: writes OUT/<profile name>/triton/ (with --target: "
                   "OUT/<profile name>/deploy/<target>/), using what a build or tune recorded there.")
@click.option("--target", "targets", multiple=True, type=click.Choice(["container", "k8s", "slurm"]),
              help="Render this deployment target instead of the Triton repository (repeatable): a Dockerfile, "
                   "Kubernetes objects (a LeaderWorkerSet beyond one node), a Slurm batch script.")
@click.option("--pretend", is_flag=True, help="Render and check, report what would change, write nothing.")
@set_option
def render(profile: str, out: Path, targets: tuple[str, ...], pretend: bool, sets: tuple[str, ...]) -> None:
    """Render PROFILE's Triton model repository (or --target deploy files), check it, and swap it into place."""
    from specdeploy import api
    report = (api.render_deploy(profile, targets, sets, out=out, pretend=pretend) if targets
              else api.render(profile, sets, out=out, pretend=pretend))
    for warning in getattr(report, "warnings", ()):
        console().warn(warning)
    lines = [f"{status:<9} {rel}" for rel, status in report.files.items()]
    verb = "would write" if pretend else "wrote"
    what = f"{', '.join(targets)} into" if targets else f"{report.layout} repository"
    lines.append(f"{verb} {what} {report.out} (checked: {getattr(report, 'checks', '') or 'no problems'})")
    console().data(report.to_dict(), text="\n".join(lines))


@cli.command("check-deploy")
@click.argument("folder", type=click.Path(path_type=Path))
def check_deploy(folder: Path) -> None:
    """Check rendered deploy files offline: Kubernetes and LeaderWorkerSet schemas, shellcheck, the Dockerfile."""
    from specdeploy import api
    problems = api.check_deploy(folder)
    console().data({"folder": str(folder), "problems": problems}, text="\n".join(problems) or f"{folder}: no problems")
    if problems:
        raise StepFailed(f"{len(problems)} problem(s) in {folder}")


@cli.command("check-repo")
@click.argument("repo", type=click.Path(path_type=Path))
def check_repo(repo: Path) -> None:
    """Check the Triton model repository REPO against Triton's schema and load-time rules."""
    from specdeploy import api
    issues = api.check_repo(repo)
    text = "\n".join(i.render() for i in issues) or f"{repo}: no problems"
    console().data({"repo": str(repo), "issues": [i.to_dict() for i in issues]}, text=text)
    if issues:
        raise StepFailed(f"{len(issues)} problem(s) in {repo}")
