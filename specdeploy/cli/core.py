"""validate, plan, profiles, doctor, mechanisms."""

from __future__ import annotations

from pathlib import Path

import click

from specdeploy import api
from specdeploy.cli._group import command, group, profile_argument, set_option
from specdeploy.console import console
from specdeploy.errors import MissingDependency, UsageError
from specdeploy.plan.text import plan_text


@command()
@profile_argument("profiles", nargs=-1, required=True)
@set_option
def validate(profiles: tuple[str, ...], sets: tuple[str, ...]) -> None:
    results = api.validate(list(profiles), sets)
    out = console()
    for result in results:
        for issue in result.errors:
            out.error(issue.render())
        for note in result.notes:
            out.warn(note.render())
        if result.ok:
            out.ok(f"{result.source} is valid")
    if out.json_mode:
        out.data([r.to_dict() for r in results])
    failed = sum(not r.ok for r in results)
    if failed:
        raise UsageError(
            f"{failed} of {len(results)} profile{'s' if len(results) > 1 else ''} invalid",
            issues=[i for r in results for i in r.errors],
        )


@command()
@profile_argument()
@set_option
def plan(profile: str, sets: tuple[str, ...]) -> None:
    resolved, the_plan = api.plan(profile, sets)
    console().data(the_plan.to_dict(), text=plan_text(resolved, the_plan))


@group()
def profiles() -> None:
    """Start your own from one: `specdeploy profiles copy NAME DEST`."""


@profiles.command("list")
def profiles_list() -> None:
    """List shipped profiles."""
    rows = api.profiles_list()
    width = max(len(r.name) for r in rows)
    console().data([r.to_dict() for r in rows], text="\n".join(f"{r.name:<{width}}  {r.description}" for r in rows))


@profiles.command("show")
@profile_argument("name")
def profiles_show(name: str) -> None:
    """Print a shipped profile."""
    text = api.profile_show(name)
    console().data({"name": name, "yaml": text}, text=text.rstrip("\n"))


@profiles.command("copy")
@profile_argument("name")
@click.argument("dest", type=click.Path(path_type=Path), default=Path())
@click.option("--force", is_flag=True, help="Overwrite an existing file.")
def profiles_copy(name: str, dest: Path, force: bool) -> None:
    """Copy a shipped profile to start your own: into folder DEST (created if missing), or to DEST.yaml."""
    target = api.profile_copy(name, dest, force=force)
    console().data({"copied": str(target)}, text=f"wrote {target}")


@command()
def doctor() -> None:
    """Exits 0 when GPU builds can run here (driver, GPU, TensorRT-LLM), else 1 after the report names what is
    missing: a CI preflight. CPU-only use (the reference runtime) needs none of it."""
    report = api.doctor()
    shown = {
        **report.entries(),
        "missing": ", ".join(report.missing) or "nothing",
        "gpus": ", ".join(f"{g['name']} ({g['memory_gib']} GiB)" for g in report.gpus) or "none",
    }
    console().data(report.to_dict(), text="\n".join(f"{k:<18} {v}" for k, v in shown.items()))
    if report.missing:
        raise MissingDependency(
            f"GPU builds cannot run here: no {', no '.join(report.missing)}",
            hint="validate, plan, render and the CPU reference runtime still work",
        )


@command()
def mechanisms() -> None:
    rows = api.mechanisms()
    lines = []
    for row in rows:
        where = "; ".join(f"{backend} {'/'.join(lines_)}" for backend, lines_ in row.support.items())
        lines.append(f"{row.name:<13} {where:<38} {row.summary}")
        lines += [
            f"{'':<15}{backend} {r['range']}: {r['decoding_type']}"
            + "".join(f"; {n}" for n in r["notes"])
            + (" (UNKNOWN: " + ", ".join(r["unknown"]) + ")" if r["unknown"] else "")
            for backend, ranges in row.trtllm_ranges.items()
            for r in ranges
        ]
    console().data([row.to_dict() for row in rows], text="\n".join(lines))
