"""Render deploy targets into `<out>/<target>/`, check them, and swap each folder in atomically."""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from specdeploy.boundedio import walk
from specdeploy.deploy.check import check_files
from specdeploy.deploy.context import DeployContext
from specdeploy.errors import StepFailed, UsageError
from specdeploy.render.env import render_template
from specdeploy.render.writer import _swap


@dataclass
class DeployReport:
    """Per-file status (`create`, `identical`, `changed`, `delete`) and what the offline checks said."""

    schema_version: ClassVar[int] = 1
    out: Path
    targets: list[str]
    files: dict[str, str] = field(default_factory=dict)
    checks: str = ""
    pretend: bool = False

    def to_dict(self) -> dict[str, object]:
        return {
            "schema_version": self.schema_version,
            "out": str(self.out),
            "targets": self.targets,
            "files": self.files,
            "checks": self.checks,
            "pretend": self.pretend,
        }


def render_files(context: DeployContext, targets: list[str] | tuple[str, ...]) -> dict[str, bytes]:
    """`<target>/<file>` -> content, every file from one strict template."""
    files: dict[str, str] = {}
    if "container" in targets:
        files["container/Dockerfile"] = render_template("deploy/container/Dockerfile.j2", context)
    if "k8s" in targets:
        if context.topology.multi_node:
            leader = render_template("deploy/k8s/leader.sh.j2", context)
            worker = render_template("deploy/k8s/worker.sh.j2", context)
            scripts = dataclasses.replace(context, leader_script=leader, worker_script=worker)
            files["k8s/leader.sh"], files["k8s/worker.sh"] = leader, worker
            files["k8s/leaderworkerset.yaml"] = render_template("deploy/k8s/multinode.yaml.j2", scripts)
        else:
            files["k8s/deployment.yaml"] = render_template("deploy/k8s/single.yaml.j2", context)
    if "slurm" in targets:
        files["slurm/sbatch.sh"] = render_template("deploy/slurm/sbatch.sh.j2", context)
    return {rel: text.encode() for rel, text in files.items()}


def _status(old: Path, new: dict[str, bytes], target: str) -> dict[str, str]:
    status = {}
    for rel, data in new.items():
        path = old.parent / rel
        status[rel] = "create" if not path.is_file() else "identical" if path.read_bytes() == data else "changed"
    if old.is_dir():
        for path in sorted(p for p in walk(old) if p.is_file()):
            rel = f"{target}/{path.relative_to(old).as_posix()}"
            status.setdefault(rel, "delete")
    return status


def write_deploy(
    context: DeployContext,
    targets: list[str] | tuple[str, ...],
    out: Path,
    *,
    pretend: bool = False,
    check: bool = True,
) -> DeployReport:
    """Render, check (problems raise StepFailed, nothing replaced), then swap each target folder into `out`."""
    out = Path(out).absolute()
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise UsageError(f"refusing to render into {out}: not a folder")
    files = render_files(context, targets)
    report = DeployReport(out, list(targets), pretend=pretend)
    problems, report.checks = check_files(files, context) if check else ([], "not run")
    if problems:
        raise StepFailed(
            "the rendered deploy files fail their checks; nothing written:\n" + "\n".join(f"  {p}" for p in problems)
        )
    for target in targets:
        mine = {rel: data for rel, data in files.items() if rel.startswith(f"{target}/")}
        report.files.update(_status(out / target, mine, target))
        if pretend:
            continue
        try:
            out.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(prefix=f".{target}.new-", dir=out))
        except OSError as exc:  # was an internal error (exit 3)
            raise UsageError(
                f"cannot write the deploy files at {out}: {exc.strerror or exc}",
                hint="--out must be a folder in a writable place (not under a file, not read-only)",
            ) from None
        try:
            for rel, data in mine.items():
                path = staging / rel.split("/", 1)[1]
                path.write_bytes(data)
                path.chmod(0o755 if rel.endswith(".sh") else 0o644)
            staging.chmod(0o755)
            if (out / target).is_dir():
                _swap(staging, out / target)
            else:
                os.rename(staging, out / target)
        finally:
            if staging.exists():
                shutil.rmtree(staging)
    return report
