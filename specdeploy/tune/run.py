"""`specdeploy tune` end to end: setup -> backend -> checkpointed strategy -> schedule -> result.json, report,
specdeploy.lock. Used by `specdeploy.api.tune` and by the build's `tune.draft_len` step action."""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from specdeploy._io import write_json_atomic
from specdeploy.errors import StepFailed, UsageError
from specdeploy.execute.actions import code_hash
from specdeploy.execute.manifest import TUNE_RESULT, lock_record, profile_hash, update_lock
from specdeploy.execute.portable import profile_ref
from specdeploy.metrics import OUTPUT_THROUGHPUT
from specdeploy.perfmodel.context import context_text
from specdeploy.perfmodel.record import band, band_text
from specdeploy.plugin.engine import Engine
from specdeploy.plugin.registry import engines, get_engine
from specdeploy.resolve.resolved import Resolved
from specdeploy.tune.checkpoint import Checkpoint, Recorder
from specdeploy.tune.engine import Provenance, drive, finish, result
from specdeploy.tune.parallel import RayPool
from specdeploy.tune.prior import calibrated_prior
from specdeploy.tune.report import REPORT, write_report
from specdeploy.tune.result import BackendChoice, TuneResult
from specdeploy.tune.setup import TuneSetup, setup_from
from specdeploy.tune.strategies import STRATEGIES
from specdeploy.tune.types import MeasureFn, Measurement

CHECKPOINT = Path(".specdeploy") / "tune" / "tune.draft_len.jsonl"
PACE_ENV = "SPECDEPLOY_TUNE_MODEL_PACE_S"
"""Seconds the model backend waits per measurement, like a device would (demos, the Ctrl-C test)."""


PREDICTING = frozenset({"model"})
"""Backends whose numbers are predictions (the performance model), never measurements."""


def pick_backend(resolved: Resolved, backend: str) -> tuple[str, str]:
    """(backend, why). auto: what can measure on this machine (`build`'s tune step asks the same), else the
    performance model, whose numbers are predictions (the why says so: the user gets it as a warning)."""
    if backend != "auto":
        return backend, f"--backend {backend}"
    name, why = measuring_backend(resolved)
    return name, f"auto: {why}"


def engine_of(resolved: Resolved) -> Engine:
    return get_engine(resolved.profile.runtime.backend)


def measuring_backend(resolved: Resolved) -> tuple[str, str]:
    """(backend, why): the profile's engine's measuring backend where it can measure here (the CPU runtime for
    reference profiles; TensorRT-LLM where it is installed AND a GPU answers), else the performance model."""
    engine = engine_of(resolved)
    can, why = engine.measuring(resolved)
    return (str(engine.tune_backend), why) if can and engine.tune_backend else ("model", why)


def evidence(backend: str) -> str:
    return "predicted" if backend in PREDICTING else "measured"


def tune_backends() -> tuple[str, ...]:
    """`model` and every installed engine's measuring backend."""
    return ("model", *sorted({e.tune_backend for e in engines().values() if e.tune_backend}))


def check_backend(name: str, resolved: Resolved) -> None:
    """The usage error `make_backend(name, ...)` would meet, raised before anything is written (`api.tune` asks
    before it creates the artifact folder)."""
    if name == "model":
        return
    if name not in tune_backends():
        raise UsageError(f"unknown tune backend {name!r}", hint=f"use auto, {', '.join(tune_backends())}")
    engine = engine_of(resolved)
    if name != engine.tune_backend:
        owners = [e for e in engines().values() if e.tune_backend == name]
        where = "on this CPU" if engine.cpu else "on a GPU machine"
        raise UsageError(
            f"--backend {name} runs {owners[0].measures}: only profiles with runtime.backend: "
            f"{' or '.join(e.name for e in owners)} (this one: {engine.name})",
            hint=f"--backend model predicts here; {engine.tune_backend or 'model'} measures {where}",
        )
    engine.check_tune_backend(resolved)


def check_tune(resolved: Resolved, backend: str, strategy: str) -> None:
    """The usage errors of a tune's backend and strategy (`auto` picks a backend that can run)."""
    if strategy not in STRATEGIES:
        raise UsageError(f"unknown strategy {strategy!r}", hint=f"known: {', '.join(STRATEGIES)}")
    if backend != "auto":
        check_backend(backend, resolved)


def make_backend(name: str, resolved: Resolved, setup: TuneSetup, work: Path) -> tuple[MeasureFn, Any]:
    check_backend(name, resolved)
    if name == "model":
        from specdeploy.perfmodel.engines import engine_efficiency
        from specdeploy.tune.backends.model import ModelBackend, profile_world

        pace = float(os.environ.get(PACE_ENV, "0") or 0)
        world = profile_world(resolved, eff=engine_efficiency(engine_of(resolved).efficiency))  # as `plan` sees it
        return ModelBackend(world, prompts=setup.prompts, output_len=setup.output_len, pace_s=pace), calibrated_prior(
            resolved
        )
    return engine_of(resolved).make_tune_backend(resolved, setup, work), calibrated_prior(resolved)


@contextlib.contextmanager
def progress_bar(enabled: bool) -> Iterator[Any]:
    """A rich bar with ETA on stderr; the total grows as the strategy asks for more."""
    if not enabled:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(
        TextColumn("tune {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(file=sys.stderr),
        transient=True,
    ) as bar:
        yield bar


def advance(bar: Any, task: Any) -> None:
    """One more done; the total grows first where the strategy did not announce the run (the final mixed
    replay, a crash's retry), so the count never reads 86/85."""
    state = bar.tasks[0]
    bar.update(task, total=max(state.total or 0, state.completed + 1), advance=1)


def progress_line(m: Measurement, *, predicted: bool = False) -> str:
    """One measurement as the user reads it: which point, what it measured (or predicted), what it cost. A
    prediction is asked once and costs no device time: it carries no repeat number and no seconds."""
    r, v = m.request, m.values
    point = (
        f"{r.kind} c={r.concurrency}"
        + ("" if r.kind == "mixed" else f" K={r.k}")
        + ("" if predicted else f" #{r.repeat}")
    )
    if not m.ok:
        return f"{point}: failed ({m.error})"
    value = (
        f"{v[OUTPUT_THROUGHPUT]:.1f} tokens/s"
        if OUTPUT_THROUGHPUT in v
        else f"step {1e3 * v['step_s']:.0f} ms"
        if "step_s" in v
        else f"acceptance length {v['al']:.2f}"
        if "al" in v
        else "done"
    )
    if predicted:
        return f"{point}: predicted {value}" + (" (replayed)" if m.replayed else "")
    cost = "replayed" if m.replayed else "same probe" if r.kind == "cost" and m.cost_s < 0.01 else f"{m.cost_s:.1f} s"
    return f"{point}: {value} ({cost})"


def reproduce(resolved: Resolved, backend: str, strategy: str, artifact_dir: Path) -> list[str]:
    """The commands that redo this tune and build, run from the artifact folder (paths relative to it)."""
    src = profile_ref(resolved, artifact_dir)
    return [
        "# from the artifact folder (OUT/<profile>/)",
        shlex.join(["specdeploy", "tune", src, "--backend", backend, "--strategy", strategy, "--out", "..", "--fresh"]),
        shlex.join(["specdeploy", "build", src, "--out", ".."]),
    ]


def tune_resolved(
    resolved: Resolved,
    artifact_dir: Path,
    *,
    backend: str = "auto",
    strategy: str = "factorized",
    fresh: bool = False,
    progress: bool = False,
    write_dir: Path | None = None,
    measure: MeasureFn | None = None,
    report: bool = True,
    say: Callable[[str], None] | None = None,
    warn: Callable[[str], None] | None = None,
    ray: bool = False,
    ray_address: str | None = None,
) -> TuneResult:
    """Tune, write `tune/result.json` (+ report) under write_dir (default artifact_dir). The checkpoint lives in
    artifact_dir. Problems (unreachable SLA, collapse) are in the result's `problems`: see `raise_problems`. `say`
    gets one line per measurement (a build step's progress; `progress` is the interactive bar); `warn` gets the
    line saying `auto` fell back to predictions. `ray` (or a `ray_address`) runs the points as Ray tasks, each
    reserving TP x PP GPUs (CPUs for the reference runtime)."""
    check_tune(resolved, backend, strategy)
    name, why = pick_backend(resolved, backend)
    predicted = name in PREDICTING
    setup = replace(setup_from(resolved), predicted=predicted)
    if warn and backend == "auto" and predicted:
        warn(
            f"tune --backend {why}, so the performance model answers: every number is a PREDICTION, nothing is "
            "measured; run where TensorRT-LLM and a GPU are to measure"
        )
    backend_fn, prior = make_backend(name, resolved, setup, artifact_dir / ".specdeploy" / "tune")
    setup = replace(setup, probe_draft_lens=getattr(backend_fn, "probe_draft_lens", None))  # what a probe costs
    checkpoint = Checkpoint(artifact_dir / CHECKPOINT, setup.hash(name, strategy, code_hash("tune")), fresh=fresh)
    with progress_bar(progress) as bar:
        task = bar.add_task(f"{setup.profile} [{name}/{strategy}]", total=0) if bar else None

        def measured(m: Measurement) -> None:
            if bar:
                advance(bar, task)
            if say:
                say(progress_line(m, predicted=predicted))

        recorder = Recorder(
            measure or backend_fn,
            checkpoint,
            on_measure=measured,
            pool=ray_pool(resolved, name, measure or backend_fn, ray_address) if ray or ray_address else None,
        )
        strat = STRATEGIES[strategy](setup, prior)
        grow = (lambda n: bar.update(task, total=(bar.tasks[0].total or 0) + n)) if bar else None
        stopped = drive(strat, recorder, budget_s=setup.time_budget_s, on_batch=grow, keep_for_replay=True)
        out = finish(strat, recorder)
    target = (write_dir or artifact_dir) / TUNE_RESULT
    provenance = Provenance(
        BackendChoice(backend, name, why),
        profile_hash(resolved),
        code_hash("tune"),
        str(target),
        reproduce(resolved, name, strategy, artifact_dir),
        band=model_band(resolved) if name == "model" else None,
        report=str(target.parent / REPORT) if report else None,
        environment=ran_on(resolved),
    )
    res = result(strat, recorder, out, backend=name, stopped=stopped, evidence=evidence(name), provenance=provenance)
    write_json_atomic(target, res.record())
    if report:
        write_report(res.record(), target.parent)
    return res


def ran_on(resolved: Resolved) -> dict[str, Any]:
    """The machine and versions of this tune; the engine is the profile's, at the release it targets."""
    from specdeploy.tune.environment import environment

    engine = engine_of(resolved)
    name = f"{engine.product} ({engine.name} backend)" if engine.product else engine.measures or engine.name
    return environment(name, engine.release(resolved.profile))


def model_band(resolved: Resolved) -> tuple[dict[str, Any] | None, str]:
    """The model backend measures nothing: how far the model was from the published record on rows like this
    (bench/perfmodel_published.py), as `plan` says, and the schedule's note that says so."""
    mechanism, gpu = resolved.profile.speculative.mechanism, resolved.gpu.name if resolved.gpu else "cpu"
    return band(mechanism, gpu), (
        f"performance model, not a measurement: speedups {band_text(mechanism, gpu)}; "
        f"{context_text(resolved.profile.tune.output_len)} (as `plan` assumes)"
    )


def ray_pool(resolved: Resolved, backend: str, measure: MeasureFn, address: str | None) -> Any:
    """The point pool: a point reserves the GPUs of one server (TP x PP); the CPU runtime's reserve one CPU."""
    hw = resolved.profile.hardware
    cpu = any(e.cpu and e.tune_backend == backend for e in engines().values())
    gpus = 0 if cpu else hw.tensor_parallel * hw.pipeline_parallel
    return RayPool(measure, gpus=gpus, parallel=resolved.profile.tune.parallel, address=address)


def raise_problems(res: TuneResult) -> None:
    """After the result and the lock are written: an unreachable SLA or a collapse fails the tune (exit 1)."""
    if res.problems:
        raise StepFailed("; ".join(res.problems), hint=f"full result: {res.result_path}")


def record_in_lock(res: TuneResult, artifact_dir: Path) -> dict[str, Any]:
    return update_lock(artifact_dir, tuned=lock_record(res.record(), str(TUNE_RESULT)))
