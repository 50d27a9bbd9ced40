"""render, check-repo: Triton model repositories."""

from __future__ import annotations

from pathlib import Path

import click

from specdeploy.cli._group import cli, profile_argument, set_option
from specdeploy.console import console
from specdeploy.errors import StepFailed


@cli.command()
@profile_argument()
@click.option("--out", type=click.Path(path_type=Path), help="Repository folder (default: triton/<profile>).")
@click.option("--pretend", is_flag=True, help="Render and check, report what would change, write nothing.")
@set_option
def render(profile: str, out: Path | None, pretend: bool, sets: tuple[str, ...]) -> None:
    """Render PROFILE's Triton model repository, check it, and swap it into place."""
    from specdeploy import api
    report = api.render(profile, sets, out=out, pretend=pretend)
    for warning in report.warnings:
        console().warn(warning)
    lines = [f"{status:<9} {rel}" for rel, status in report.files.items()]
    verb = "would write" if pretend else "wrote"
    lines.append(f"{verb} {report.layout} repository {report.out} (checked: no problems)")
    console().data(report.to_dict(), text="\n".join(lines))


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
