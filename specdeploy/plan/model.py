"""Plan and Step values. No behaviour lives here: `specdeploy.execute` runs a Plan, `plan` prints one."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any


class Stage(str, Enum):
    """Step kinds, in pipeline order; `--only` and `--from` select by stage or by step id."""

    FETCH = "fetch"
    CONVERT = "convert"
    QUANTIZE = "quantize"
    ENGINE = "engine"
    EMIT = "emit"
    TUNE = "tune"
    RENDER = "render"
    CHECK = "check"


TUNE_STEP = "tune.draft_len"
"""The id of the step that chooses K per concurrency; emit and render read its outputs (`execute.tuned`)."""


@dataclass(frozen=True)
class Step:
    """One unit of work with a stable id (`engine.target`, `emit.llm_api`, `render.triton`).

    A step either runs a subprocess (`argv`) or an in-process action registered under `action`
    with JSON-able `params`. `needs` lists optional components (`tensorrt_llm`, `gpu`) it requires.
    """

    id: str
    stage: Stage
    description: str
    depends_on: tuple[str, ...] = ()
    argv: tuple[str, ...] = ()
    action: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    inputs: dict[str, Any] = field(default_factory=dict)
    outputs: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    optional: tuple[str, ...] = ()
    """Dependencies the step can do without: one never built (`--only emit.llm_api` before any fetch) leaves the
    step to the profile's references (hub id + revision) instead of skipping it."""

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["stage"] = self.stage.value
        return data


@dataclass(frozen=True)
class Plan:
    """Everything a build would do, and the resolved facts it was computed from."""

    profile_name: str
    steps: tuple[Step, ...]
    resolved: dict[str, Any]
    advice: tuple[str, ...] = ()
    """The performance model's advice as sentences (`plan`'s text)..."""
    advice_records: tuple[dict[str, Any], ...] = ()
    """...and as records (guideline, mechanism, concurrency, k, numbers) for `plan --json`."""
    values: tuple[dict[str, Any], ...] = ()
    """Every resolved profile value with its source: {"path", "value", "source": file:line | --set | default}."""
    throughput: tuple[dict[str, Any], ...] = ()
    """Predicted plain and speculative tokens/s per concurrency (perfmodel `Advice.throughput()`)."""

    def step(self, step_id: str) -> Step:
        for step in self.steps:
            if step.id == step_id:
                return step
        raise KeyError(step_id)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": 1,
            "profile": self.profile_name,
            "values": list(self.values),
            "resolved": self.resolved,
            "steps": [s.to_dict() for s in self.steps],
            "advice": list(self.advice_records),
            "advice_text": list(self.advice),
            "throughput": list(self.throughput),
        }
