"""render, check-repo: Triton model repositories."""

from __future__ import annotations

from pathlib import Path

import click

from specdeploy import api
from specdeploy.cli._group import command, profile_argument, set_option
from specdeploy.console import console
from specdeploy.deploy.render import DeployReport
from specdeploy.errors import StepFailed
from specdeploy.render.writer import RenderReport


@command()
@profile_argument()
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=Path("artifacts"),
    show_default=True,
    help="Artifacts root, as for build and tune: writes OUT/<profile name>/triton/ (with --target: "
    "OUT/<profile name>/deploy/<target>/), using what a build or tune recorded there.",
)
@click.option(
    "--target",
    "targets",
    multiple=True,
    type=click.Choice(["container", "k8s", "slurm"]),
    help="Render this deployment target instead of the Triton repository (repeatable): a Dockerfile, "
    "Kubernetes objects (a LeaderWorkerSet beyond one node), a Slurm batch script.",
)
@click.option("--pretend", is_flag=True, help="Render and check, report what would change, write nothing.")
@set_option
def render(profile: str, out: Path, targets: tuple[str, ...], pretend: bool, sets: tuple[str, ...]) -> None:
    report: RenderReport | DeployReport
    if targets:
        report = api.render_deploy(profile, targets, sets, out=out, pretend=pretend)
        what, checks = f"{', '.join(targets)} into", report.checks
    else:
        report = api.render(profile, sets, out=out, pretend=pretend)
        what, checks = f"{report.layout} repository", ""
        for warning in report.warnings:
            console().warn(warning)
    lines = [f"{status:<9} {rel}" for rel, status in report.files.items()]
    verb = "would write" if pretend else "wrote"
    lines.append(f"{verb} {what} {report.out} (checked: {checks or 'no problems'})")
    console().data(report.to_dict(), text="\n".join(lines))


@command("check-deploy")
@click.argument("folder", type=click.Path(path_type=Path))
def check_deploy(folder: Path) -> None:
    problems = api.check_deploy(folder)
    console().data({"folder": str(folder), "problems": problems}, text="\n".join(problems) or f"{folder}: no problems")
    if problems:
        raise StepFailed(f"{len(problems)} problem(s) in {folder}")


@command("check-repo")
@click.argument("repo", type=click.Path(path_type=Path))
def check_repo(repo: Path) -> None:
    found = api.check_repo(repo)
    text = "\n".join(i.render() for i in found.issues) or f"{repo}: no problems"
    console().data(found.to_dict(), text=text)
    if not found.ok:
        raise StepFailed(f"{len(found.issues)} problem(s) in {repo}")
