"""Build action `render_deploy` and `render_deploy_resolved` that both it and the CLI use."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specdeploy.deploy.render import DeployReport
from specdeploy.execute.context import ActionContext
from specdeploy.resolve.resolved import Resolved


def render_deploy_resolved(
    resolved: Resolved, targets: list[str] | tuple[str, ...], out: Path, *, pretend: bool = False
) -> DeployReport:
    """Context -> `out/<target>/` for each target, checked offline when the checkers are installed."""
    from specdeploy.deploy.check import tools_available
    from specdeploy.deploy.context import build_context
    from specdeploy.deploy.render import write_deploy

    context = build_context(resolved, targets)
    report = write_deploy(context, targets, out, pretend=pretend, check=tools_available())
    if not tools_available():
        report.checks = "not run: pip install 'specdeploy[deploy]' for the offline checks"
    return report


def render_deploy(ctx: ActionContext) -> dict[str, Any]:
    targets: list[str] = list(ctx.resolved.profile.deploy.targets)
    report = render_deploy_resolved(ctx.resolved, targets, ctx.write_dir / "deploy")
    for rel, status in report.files.items():
        ctx.log.write(f"{status:<9} deploy/{rel}\n")
    ctx.log.write(f"checks: {report.checks}\n")
    return {"deploy": "deploy", "targets": targets, "files": report.files, "checks": report.checks}
