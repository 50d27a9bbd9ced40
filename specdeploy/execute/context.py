"""ActionContext: what an in-process step action receives. Actions live with their stage
(`specdeploy.render.actions`, `specdeploy.tune.actions`, ...) and are looked up by `Step.action`
through the table in `specdeploy.execute.actions`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from specdeploy.plan.model import Plan, Step
from specdeploy.resolve.resolved import Resolved

if TYPE_CHECKING:
    from specdeploy.execute.hashing import HashCache
    from specdeploy.execute.process import ProcessResult


class StepLog(Protocol):
    def write(self, text: str) -> None: ...


@dataclass
class ActionContext:
    """Inputs of one step action.

    `artifact_dir` is `DIR/<profile>/`; `outputs` holds what earlier steps recorded (step id ->
    JSON-able dict, e.g. fetched checkpoint folders); an action returns its own outputs dict.

    `out_dir` is a private staging folder laid out like `artifact_dir`: write files there (e.g.
    `out_dir / "triton" / ...`) and the executor swaps them into `artifact_dir` only after the action
    returned, then writes the stamp — so a crash never leaves a half-written output that looks done.
    When `out_dir` is None (an action called directly, outside the executor) write to `artifact_dir`.
    """

    resolved: Resolved
    plan: Plan
    step: Step
    artifact_dir: Path
    log: StepLog
    outputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    out_dir: Path | None = None
    log_path: Path | None = None
    force: bool = False
    """True when the user forced this step (e.g. `build --tune`)."""
    hash_cache: HashCache | None = None
    report: Callable[[str], None] = field(default=lambda _: None)
    """The build's line reporter (the user's console)."""

    def progress(self, line: str) -> None:
        """A line of progress from a step that runs for minutes (the tune): into the step log and to the user."""
        self.log.write(line + "\n")
        self.report(f"{self.step.id}: {line}")

    def output_of(self, step_id: str) -> dict[str, Any]:
        return self.outputs.get(step_id, {})

    @property
    def write_dir(self) -> Path:
        """Where this action writes its files: the staging folder, or artifact_dir when run directly."""
        return self.out_dir or self.artifact_dir

    def run(
        self,
        argv: Sequence[str],
        *,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        timeout: float | None = None,
    ) -> ProcessResult:
        """Run a subprocess through `run_process`, logging into this step's log."""
        from specdeploy.execute.process import child_env, run_process

        log_path = self.log_path or self.artifact_dir / ".specdeploy" / "logs" / f"{self.step.id}.log"
        return run_process(
            argv,
            log_path=log_path,
            env=child_env(env),
            cwd=cwd or self.write_dir,
            timeout=timeout,
            step_id=self.step.id,
        )
