"""What a build's tune step decided, as the later steps (emit, render) of every engine read it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from specdeploy.execute.context import ActionContext
from specdeploy.plan.model import TUNE_STEP

if TYPE_CHECKING:
    from specdeploy.resolve.resolved import Resolved


def chosen_schedule(ctx: ActionContext) -> tuple[int, Any, int | None]:
    """(draft_len, schedule, max_concurrency): the tune step's results when it ran, else the profile's."""
    return schedule_from(ctx.resolved, ctx.output_of(TUNE_STEP))


def schedule_from(resolved: Resolved, tuned: dict[str, Any]) -> tuple[int, Any, int | None]:
    """The tune step's outputs may hold `draft_len`, `schedule` (lower-bound map; JSON keys are strings) or
    `ranges` (canonical `[lo, hi, K]`), and `max_concurrency`; without them, the profile's."""
    spec = resolved.profile.speculative
    schedule: Any = spec.schedule
    if tuned.get("ranges"):
        schedule = [tuple(r) for r in tuned["ranges"]]
    elif tuned.get("schedule"):
        schedule = {int(k): int(v) for k, v in tuned["schedule"].items()}
    return int(tuned.get("draft_len", resolved.draft_len)), schedule, tuned.get("max_concurrency", spec.max_concurrency)


def write_output(folder: Path, name: str, text: str, mode: int = 0o644) -> str:
    """Write one emitted file of a step (its name is what the step's outputs list)."""
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)
    return name


def fetched(ctx: ActionContext, role: str, default: str | None) -> str | None:
    """The folder the fetch step of `role` (target, draft) wrote, or `default`."""
    return ctx.output_of(f"fetch.{role}").get("path") or default
