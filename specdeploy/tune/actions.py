"""The build's `tune.draft_len` step: tune with the step's measurement backend and hand the schedule to the
emit/render steps through the step outputs (and, via the build's write_lock, to specdeploy.lock)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from specdeploy.execute.context import ActionContext
from specdeploy.tune.emit import lock_record
from specdeploy.tune.run import RESULT, raise_problems, tune_resolved


def tune(ctx: ActionContext) -> dict[str, Any]:
    """Outputs: draft_len, schedule (lower-bound map, string keys), ranges, max_concurrency, emitted, result..."""
    backend = str(ctx.step.params.get("measure", "auto"))
    res = tune_resolved(ctx.resolved, ctx.artifact_dir, backend=backend, fresh=ctx.force,
                        write_dir=ctx.write_dir, say=ctx.progress)
    if res["problems"] and ctx.out_dir is not None:  # a failed step's staging folder is deleted: keep the evidence
        written = Path(res["result_path"]).parent
        kept = ctx.artifact_dir / ".specdeploy" / "failed" / ctx.step.id
        shutil.rmtree(kept, ignore_errors=True)
        shutil.copytree(written, kept)
        res["result_path"] = str(kept / RESULT.name)
    raise_problems(res)
    return lock_record(res, str(RESULT))
