"""Build actions `render_triton` and `check_triton`, and `render_resolved` that both they and the CLI use."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specdeploy.errors import StepFailed
from specdeploy.execute.context import ActionContext
from specdeploy.plugin.registry import get_engine
from specdeploy.render.context import build_context, layout_of, triton_layout
from specdeploy.render.model import RenderInputs
from specdeploy.render.writer import RenderReport, write_repo
from specdeploy.resolve.resolved import Resolved


def llm_args_for(
    resolved: Resolved, *, draft_len: int | None = None, schedule: Any = None, max_concurrency: int | None = None
) -> dict[str, Any]:
    """The build's LLM() arguments (the engine's `serving_args`), the same the build emits."""
    spec = resolved.profile.speculative
    return get_engine(resolved.profile.runtime.backend).serving_args(
        resolved,
        draft_len=resolved.draft_len if draft_len is None else draft_len,
        schedule=spec.schedule if schedule is None else schedule,
        max_concurrency=spec.max_concurrency if max_concurrency is None else max_concurrency,
    )


def render_resolved(
    resolved: Resolved,
    out: Path,
    *,
    inputs: RenderInputs | None = None,
    llm_args: dict[str, Any] | None = None,
    pretend: bool = False,
) -> RenderReport:
    """Context -> repository in `out` (checked, swapped in atomically); llm_args default to the build's."""
    if llm_args is None and triton_layout(layout_of(resolved)).needs_llm_args:
        llm_args = llm_args_for(resolved)
    return write_repo(build_context(resolved, inputs, llm_args=llm_args), out, pretend=pretend)


def render_triton(ctx: ActionContext) -> dict[str, Any]:
    report = render_built(ctx.resolved, ctx.outputs, ctx.write_dir / "triton", compare=ctx.artifact_dir / "triton")
    for rel, status in report.files.items():  # against the repository it replaces: every change and delete
        ctx.log.write(f"{status:<9} {rel}\n")
    return {"repo": "triton", "layout": report.layout, "files": report.files}


def render_built(
    resolved: Resolved,
    outputs: dict[str, dict[str, Any]],
    out: Path,
    *,
    compare: Path | None = None,
    pretend: bool = False,
) -> RenderReport:
    """The repository a build renders from its steps' outputs (fetched checkpoints, engines, the tuned schedule;
    without them, the profile's values); statuses against `compare` (default `out`)."""
    from specdeploy.execute.tuned import TUNE_STEP, schedule_from
    from specdeploy.schedule import lower_bounds

    draft_len, schedule, max_concurrency = schedule_from(resolved, outputs.get(TUNE_STEP, {}))
    engine = outputs.get("engine.target", {})
    tuned = isinstance(schedule, list)  # the tune step's canonical ranges, not the profile's map
    inputs = RenderInputs(
        engine_dir=engine.get("dir"),
        draft_engine_dir=outputs.get("engine.draft", {}).get("dir"),
        engine_max_draft_len=engine.get("max_draft_len"),
        tokenizer_dir=outputs.get("fetch.target", {}).get("path"),
        model_dir=_checkpoint(resolved, outputs.get("fetch.target", {})),
        draft_len=draft_len,
        schedule=lower_bounds(schedule) if tuned else schedule,
        max_concurrency=max_concurrency,
    )
    llm_args = None
    if triton_layout(layout_of(resolved)).needs_llm_args:
        llm_args = llm_args_for(resolved, draft_len=draft_len, schedule=schedule, max_concurrency=max_concurrency)
    context = build_context(resolved, inputs, llm_args=llm_args)
    return write_repo(context, out, pretend=pretend, compare=compare)


def _checkpoint(resolved: Resolved, fetched: dict[str, Any]) -> str | None:
    """The fetched target as a serving host finds it (`${HF_HUB_CACHE}/...` snapshot, or a local folder), the
    way serve.sh names it: model.yaml stays relocatable, and the llmapi model.py expands the variable."""
    from specdeploy.execute.portable import checkpoint_ref

    if not fetched.get("path"):
        return None
    target = resolved.profile.target
    return checkpoint_ref(target.model, target.revision, fetched)


def check_triton(ctx: ActionContext) -> dict[str, Any]:
    from specdeploy.render.check import check_repo

    repo = ctx.artifact_dir / "triton"
    issues = check_repo(repo)
    for issue in issues:
        ctx.log.write(issue.render() + "\n")
    if issues:
        raise StepFailed(f"{len(issues)} problem(s) in {repo}:\n" + "\n".join(f"  {i.render()}" for i in issues))
    return {"repo": "triton", "issues": 0}
