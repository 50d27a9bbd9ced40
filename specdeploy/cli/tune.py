"""tune."""

from __future__ import annotations

from pathlib import Path

import click

from specdeploy import api
from specdeploy.cli._group import command, profile_argument, set_option
from specdeploy.console import console
from specdeploy.tune.run import tune_backends
from specdeploy.tune.summary import decision_lines


def _known_backend(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    """Installed engines add backends, so the choice is read from the registry, and a wrong one is still located
    at --backend as click's own choices are."""
    known = ("auto", *tune_backends())
    if value not in known:
        raise click.BadParameter(f"{value!r} is not one of {', '.join(known)}")
    return value


@command()
@profile_argument()
@set_option
@click.option(
    "--backend",
    default="auto",
    show_default=True,
    metavar="auto|model|ENGINE",
    callback=_known_backend,
    help="What measures: `model` (the performance model predicts) or an installed engine's measuring "
    "backend (reference: the CPU runtime, trtllm: TensorRT-LLM, vllm: vLLM); auto: the profile "
    "engine's where it can measure here.",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=Path("artifacts"),
    show_default=True,
    help="Artifacts root; results go to OUT/<profile>/tune/.",
)
@click.option(
    "--strategy",
    type=click.Choice(["factorized", "grid", "hillclimb"]),
    default="factorized",
    show_default=True,
    help="Search strategy.",
)
@click.option(
    "--resume/--fresh", default=True, show_default=True, help="Replay the checkpoint's measurements, or start over."
)
@click.option(
    "--ray",
    "use_ray",
    is_flag=True,
    help="Run the measurement points as Ray tasks on this machine (ray.init()), each reserving its "
    "TP x PP GPUs, at most tune.parallel at once (pip install 'specdeploy[ray]').",
)
@click.option("--ray-address", metavar="ADDR", help="...on the Ray cluster at ADDR instead (implies --ray).")
def tune(
    profile: str,
    sets: tuple[str, ...],
    backend: str,
    out: Path,
    strategy: str,
    resume: bool,
    use_ray: bool,
    ray_address: str | None,
) -> None:
    out_ = console()
    live = not out_.json_mode and out_.err.isatty()  # a live bar on a terminal, a line per measurement in logs
    res = api.tune(
        profile,
        sets,
        backend=backend,
        out=out,
        strategy=strategy,
        fresh=not resume,
        progress=live,
        say=None if live else out_.info,
        warn=out_.warn,
        ray=use_ray,
        ray_address=ray_address,
    )
    shown = res.to_dict()
    out_.data({k: v for k, v in shown.items() if k != "measurements"}, text="\n".join(decision_lines(shown)))
