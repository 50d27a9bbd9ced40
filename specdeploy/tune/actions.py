"""The build's `tune.draft_len` step: the schedule the emit/render steps use, decided one way a CI job can rely
on (docs/ci.md, "Builds without a GPU"):

1. a tune result already in the artifact folder (`specdeploy tune` writes one) for this profile (same profile
   hash and tuner code) is adopted, unless it is a prediction and this machine can measure;
2. else the step measures: the CPU runtime for reference profiles, TensorRT-LLM where it and a GPU are present;
3. else the performance model predicts (seconds), and the outputs, lock and emitted files say "predicted".

`build --tune` skips (1). The measuring backend is part of the step's cache key (`runtime_inputs`), so a
prediction cached on a CPU machine is re-tuned by measurement where TensorRT-LLM and a GPU are."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

from specdeploy.boundedio import read_json
from specdeploy.execute.actions import code_hash
from specdeploy.execute.context import ActionContext
from specdeploy.execute.manifest import TUNE_RESULT, lock_record, profile_hash
from specdeploy.plan.model import Step
from specdeploy.resolve.resolved import Resolved
from specdeploy.tune.run import PREDICTING, measuring_backend, raise_problems, tune_resolved


def runtime_inputs(step: Step, resolved: Resolved) -> dict[str, str]:
    """What shapes the step's output beyond its definition: the backend that would measure here."""
    wanted = str(step.params.get("measure", "auto"))
    return {"measuring backend": measuring_backend(resolved)[0] if wanted == "auto" else wanted}


def adoptable(ctx: ActionContext, can_measure: bool) -> dict[str, Any] | None:
    """The tune result in the artifact folder, when it was tuned for this very profile by this tuner's code."""
    try:
        res = read_json(ctx.artifact_dir / TUNE_RESULT)
    except (OSError, ValueError):
        return None
    if not isinstance(res, dict):
        return None
    same = res.get("profile_hash") == profile_hash(ctx.resolved) and res.get("code") == code_hash("tune")
    if not same or res.get("problems") or (res.get("evidence") == "predicted" and can_measure):
        return None
    return res  # type: ignore[no-any-return]


def _restage(ctx: ActionContext) -> None:
    """The adopted tune's files pass through the step's staging folder, so the step records them (the manifest
    lists them and `verify` checks them) as if it had written them."""
    tune_dir = ctx.artifact_dir / TUNE_RESULT.parent
    if ctx.out_dir is None:
        return
    for path in sorted(tune_dir.rglob("*")):
        if path.is_file() and not path.is_symlink():
            copy = ctx.out_dir / path.relative_to(ctx.artifact_dir)
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, copy)


def tune(ctx: ActionContext) -> dict[str, Any]:
    """Outputs: draft_len, schedule (lower-bound map, string keys), ranges, max_concurrency, emitted, evidence..."""
    backend = str(ctx.step.params.get("measure", "auto"))
    why = f"measure: {backend}"
    if backend == "auto":
        backend, why = measuring_backend(ctx.resolved)
    adopted = None if ctx.force else adoptable(ctx, backend not in PREDICTING)
    if adopted is not None:
        ctx.progress(
            f"adopted {TUNE_RESULT} ({adopted['evidence']} by the {adopted['backend']} backend) for this profile"
        )
        _restage(ctx)
        return {**lock_record(adopted, str(TUNE_RESULT)), "adopted": True}
    if backend in PREDICTING:
        ctx.progress(
            f"warning: {why}: the performance model PREDICTS the schedule (nothing is measured); the "
            "emitted files say so. Build where TensorRT-LLM and a GPU are to measure it"
        )
    res = tune_resolved(
        ctx.resolved, ctx.artifact_dir, backend=backend, fresh=ctx.force, write_dir=ctx.write_dir, say=ctx.progress
    )
    if res.problems and ctx.out_dir is not None:  # a failed step's staging folder is deleted: keep the evidence
        written = Path(res.result_path).parent
        kept = ctx.artifact_dir / ".specdeploy" / "failed" / ctx.step.id
        shutil.rmtree(kept, ignore_errors=True)
        shutil.copytree(written, kept)
        res = replace(res, result_path=str(kept / TUNE_RESULT.name))
    raise_problems(res)
    return lock_record(res.record(), str(TUNE_RESULT))
