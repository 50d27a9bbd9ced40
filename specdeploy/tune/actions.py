"""The build's `tune.draft_len` step: tune with the step's measurement backend and hand the schedule to the
emit/render steps through the step outputs (and, via the build's write_lock, to specdeploy.lock)."""

from __future__ import annotations

from typing import Any

from specdeploy.execute.context import ActionContext
from specdeploy.tune.emit import lock_record
from specdeploy.tune.run import RESULT, raise_problems, tune_resolved


def tune(ctx: ActionContext) -> dict[str, Any]:
    """Outputs: draft_len, schedule (lower-bound map, string keys), ranges, max_concurrency, emitted, result..."""
    backend = str(ctx.step.params.get("measure", "auto"))
    res = tune_resolved(ctx.resolved, ctx.artifact_dir, backend=backend, fresh=ctx.force,
                        write_dir=ctx.write_dir)
    raise_problems(res)
    return lock_record(res, str(RESULT))
