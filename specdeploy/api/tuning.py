"""`tune`: the draft length per concurrency, measured or predicted, recorded in the artifact folder."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from specdeploy.api.profiles import load_and_resolve

if TYPE_CHECKING:
    from specdeploy.tune.result import TuneResult


def tune(
    source: str,
    sets: tuple[str, ...] = (),
    *,
    backend: str = "auto",
    out: Path = Path("artifacts"),
    strategy: str = "factorized",
    fresh: bool = False,
    progress: bool = False,
    say: Callable[[str], None] | None = None,
    warn: Callable[[str], None] | None = None,
    ray: bool = False,
    ray_address: str | None = None,
) -> TuneResult:
    """Tune the draft length per concurrency into `out/<profile>/tune/result.json` (+ report) and
    specdeploy.lock; resumes from the checkpoint unless `fresh`. Raises StepFailed (exit 1) after writing
    when the SLA is unreachable or the schedule collapses under mixed concurrency. `progress`: a live bar;
    `say`: one line per measurement instead (logs, CI); `warn`: told when `auto` falls back to predictions.
    `ray`/`ray_address`: the points run as Ray tasks on this machine or that cluster, at most `tune.parallel` at
    once, each reserving its TP x PP GPUs."""
    from specdeploy.execute.artifact import artifact_folder, artifact_lock, check_folder
    from specdeploy.tune.run import check_tune, raise_problems, record_in_lock, tune_resolved

    resolved = load_and_resolve(source, sets)
    name = resolved.loaded.name
    check_folder(out, name)
    check_tune(resolved, backend, strategy)  # before the folder is made: a refused tune leaves nothing behind
    artifact_dir = artifact_folder(out, name)
    with artifact_lock(artifact_dir, name, report=say or (lambda _: None)):  # a build into it waits, and vice versa
        res = tune_resolved(
            resolved,
            artifact_dir,
            backend=backend,
            strategy=strategy,
            fresh=fresh,
            progress=progress,
            say=say,
            warn=warn,
            ray=ray,
            ray_address=ray_address,
        )
        record_in_lock(res, artifact_dir)
    raise_problems(res)
    return res
