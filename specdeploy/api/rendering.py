"""`render`: the Triton repository and the deploy targets written from a build; `check-deploy`, `check-repo`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from specdeploy.api.profiles import load_and_resolve
from specdeploy.errors import UsageError

if TYPE_CHECKING:
    from specdeploy.deploy.render import DeployReport
    from specdeploy.render.check_pbtxt import RepoCheck
    from specdeploy.render.writer import RenderReport


def render(
    source: str, sets: tuple[str, ...] = (), *, out: Path = Path("artifacts"), pretend: bool = False
) -> RenderReport:
    """Render the profile's Triton repository into `out/<profile>/triton` (as `build --out out` does), from what a
    build or tune of this very profile recorded there; checked, swapped in atomically under the folder's lock.
    Returns the RenderReport (per-file create/identical/changed/delete)."""
    from specdeploy.execute.recorded import artifact_for, recorded_outputs
    from specdeploy.plan.planner import needs_tune
    from specdeploy.render.actions import render_built

    resolved = load_and_resolve(source, sets)
    with artifact_for(resolved, out, "triton", pretend=pretend) as folder:
        outputs, note = recorded_outputs(resolved, folder)
        report = render_built(resolved, outputs, folder / "triton", pretend=pretend)
    if note and not outputs:
        report.warnings.append(note)
    if needs_tune(resolved) and "tune.draft_len" not in outputs:  # say what this repository serves instead
        report.warnings.append(
            f"speculative.draft_len is auto, which only a tune decides: this render serves a fixed K = "
            f"{resolved.draft_len} (the most the profile plans for) with no schedule. `specdeploy build` (or `tune`) "
            "into the same --out records the tuned schedule, which render then uses; or set speculative.draft_len "
            "(or --set speculative.draft_len=N) to choose K"
        )
    return report


def render_deploy(
    source: str,
    targets: tuple[str, ...],
    sets: tuple[str, ...] = (),
    *,
    out: Path = Path("artifacts"),
    pretend: bool = False,
) -> DeployReport:
    """Render deploy targets (container, k8s, slurm) into `out/<profile>/deploy/<target>/` (as `build` does),
    checked offline when the checkers are installed; returns the DeployReport."""
    from specdeploy.deploy.actions import render_deploy_resolved
    from specdeploy.execute.recorded import artifact_for

    resolved = load_and_resolve(source, sets)
    with artifact_for(resolved, out, "deploy", pretend=pretend) as folder:
        return render_deploy_resolved(resolved, targets, folder / "deploy", pretend=pretend)


def check_deploy(path: Path) -> list[str]:
    """Every problem in a rendered deploy folder: Kubernetes and LeaderWorkerSet schemas, shellcheck, Dockerfile."""
    from specdeploy.boundedio import walk
    from specdeploy.deploy.check import check_files
    from specdeploy.render.context import MANIFEST

    if not path.is_dir():
        raise UsageError(f"{path} is not a folder")
    if (path / MANIFEST).is_file():
        raise UsageError(
            f"{path} is a Triton repository, not rendered deploy files",
            hint="pass OUT/<profile>/deploy (what `render --target` and `build` write); "
            "`specdeploy check-repo` checks a Triton repository",
        )
    files = {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(walk(path)) if p.is_file()}
    problems, checked = check_files(files) if files else ([], "")
    if not checked:  # nothing there is a deploy file: "no problems" would be untrue
        raise UsageError(
            f"{path} holds no deploy files (Kubernetes YAML, shell scripts, a Dockerfile)",
            hint="run `specdeploy render PROFILE --target ...`, or pass the folder it wrote",
        )
    return problems


def check_repo(path: Path) -> RepoCheck:
    """Every problem in a Triton model repository (Triton's schema and load-time rules, specdeploy's own)."""
    from specdeploy.render.check import check_repo as check
    from specdeploy.render.check_pbtxt import RepoCheck

    if not path.is_dir():
        raise UsageError(f"{path} is not a folder")
    return RepoCheck(path, tuple(check(path)))
