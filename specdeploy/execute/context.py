"""ActionContext: what an in-process step action receives. Actions live with their stage
(`specdeploy.render.actions`, `specdeploy.tune.actions`, ...) and are looked up by `Step.action`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from specdeploy.plan.model import Plan, Step
from specdeploy.resolve.resolver import Resolved


class StepLog(Protocol):
    def write(self, text: str) -> None: ...


@dataclass
class ActionContext:
    """Inputs of one step action.

    `artifact_dir` is `DIR/<profile>/`; `outputs` holds what earlier steps recorded (step id ->
    JSON-able dict, e.g. fetched checkpoint folders); an action returns its own outputs dict.
    """

    resolved: Resolved
    plan: Plan
    step: Step
    artifact_dir: Path
    log: StepLog
    outputs: dict[str, dict[str, Any]] = field(default_factory=dict)

    def output_of(self, step_id: str) -> dict[str, Any]:
        return self.outputs.get(step_id, {})
