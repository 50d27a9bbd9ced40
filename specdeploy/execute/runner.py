"""Run a Plan: select steps, check what each needs, reuse or (re)build by cache key, stamp only on success.

Each step writes into a private staging folder that is swapped into the artifact folder after it
succeeds; the stamp (`.specdeploy/steps/<id>.json`) is written last, atomically. So a build killed
at any moment resumes on rerun and never reuses a half-written output.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, ClassVar

from specdeploy._io import write_json_atomic
from specdeploy.boundedio import read_json
from specdeploy.errors import SpecdeployError, StepFailed, UsageError
from specdeploy.execute import keys
from specdeploy.execute.actions import code_hash, load_action, runtime_inputs
from specdeploy.execute.context import ActionContext
from specdeploy.execute.fetch import fingerprint
from specdeploy.execute.hashing import HashCache
from specdeploy.execute.needs import check_needs
from specdeploy.execute.process import child_env, run_process
from specdeploy.execute.workdir import resolve_argv, swap_in, verify_outputs
from specdeploy.plan.model import Plan, Step
from specdeploy.resolve.resolved import Resolved

NeedsChecker = Callable[[Step, Resolved], None]


@dataclass
class StepResult:
    id: str
    stage: str
    status: str  # built | reused | rebuilt | failed | skipped | not-selected
    reason: str = ""
    key: str | None = None
    started_at: str | None = None
    duration_s: float = 0.0
    log: str | None = None
    outputs: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        """`id  status in 12.3 s (reason)`: a step that ran says how long it took."""
        ran = (
            self.status
            if self.status not in ("built", "rebuilt", "failed")
            else f"{self.status} in " + (elapsed(self.duration_s))
        )
        text = {"reused": "reused (key unchanged)", "rebuilt": f"{ran} (reason: {self.reason})"}.get(
            self.status, ran if not self.reason else f"{ran} ({self.reason})"
        )
        return f"{self.id:<20} {text}"


LONG_STAGES = ("fetch", "convert", "quantize", "engine", "tune")
"""Stages whose steps can run for minutes: they announce their start, so a silent console means work."""


def elapsed(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds < 60 else f"{int(seconds // 60)} min {int(seconds % 60):02d} s"


@dataclass
class BuildResult:
    """Each step's outcome in the artifact folder (the manifest records the same steps)."""

    schema_version: ClassVar[int] = 1
    artifact_dir: Path
    steps: list[StepResult]
    started_at: str
    duration_s: float = 0.0
    problems: list[str] = field(default_factory=list)
    """What the finished folder holds that `verify` would refuse (a file no step recorded, one changed since)."""

    @property
    def ok(self) -> bool:
        return not self.problems and not any(s.status in ("failed", "skipped") for s in self.steps)


class _FileLog:
    """ctx.log: appends to the step log (opened per write, so subprocess output interleaves cleanly)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def write(self, text: str) -> None:
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(text)


def _matches(step: Step, selector: str) -> bool:
    return step.id == selector or step.stage.value == selector


def select(plan: Plan, only: tuple[str, ...] = (), start: str | None = None) -> set[str]:
    """Ids to run: `--only` step ids or stages; `--from` a step id or stage and everything after it."""
    ids = [s.id for s in plan.steps]
    for selector in (*only, *([start] if start else [])):
        if not any(_matches(s, selector) for s in plan.steps):
            stages = sorted({s.stage.value for s in plan.steps})
            raise UsageError(
                f"no step or stage '{selector}' in this plan",
                hint=f"steps: {', '.join(ids)}; stages: {', '.join(stages)}",
            )
    chosen = set(ids)
    if start:
        first = next(i for i, s in enumerate(plan.steps) if _matches(s, start))
        chosen = {s.id for s in plan.steps[first:]}
    if only:
        chosen &= {s.id for s in plan.steps if any(_matches(s, o) for o in only)}
    return chosen


def stamped_files(artifact_dir: Path) -> dict[str, str]:
    """`rel -> sha256` of every file a step's stamp records: what the builds wrote into the artifact folder."""
    files: dict[str, str] = {}
    for stamp in sorted((artifact_dir / ".specdeploy" / "steps").glob("*.json")):
        files.update(_digests(_read_stamp(stamp)))
    return files


def _read_stamp(path: Path) -> dict[str, Any] | None:
    try:
        data = read_json(path)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


class Runner:
    def __init__(
        self,
        plan: Plan,
        resolved: Resolved,
        artifact_dir: Path,
        *,
        keep_going: bool = False,
        force: tuple[str, ...] = (),
        needs: NeedsChecker = check_needs,
        report: Callable[[str], None] = lambda _: None,
        trtllm_version: str | None = None,
    ) -> None:
        self.plan, self.resolved, self.dir = plan, resolved, artifact_dir
        self.keep_going, self.force, self.needs, self.report = keep_going, force, needs, report
        self.state = artifact_dir / ".specdeploy"
        self.cache = HashCache(self.state / "hashes.json")
        self.profile = resolved.profile.model_dump(mode="json")
        self.trtllm = trtllm_version or (resolved.profile.runtime.trtllm_version if resolved.line else None)
        self.gpu = resolved.gpu.sm_arch if resolved.gpu else None
        self.outputs: dict[str, dict[str, Any]] = {}
        self.files: dict[str, dict[str, str]] = {}  # step id -> {rel: sha256} of what it wrote

    def run(self, selected: set[str]) -> BuildResult:
        started, t0 = _now(), time.monotonic()
        (self.state / "steps").mkdir(parents=True, exist_ok=True)
        shutil.rmtree(self.state / "tmp", ignore_errors=True)  # leftovers of a killed build: never reused
        results: dict[str, StepResult] = {}
        stopped: str | None = None
        never_built: set[str] = set()
        stale: dict[str, str] = {}  # a step not selected whose recorded output no longer fits its inputs: why
        for step in self.plan.steps:
            bad = [d for d in step.depends_on if results.get(d) and results[d].status in ("failed", "skipped")]
            unbuilt = [d for d in step.depends_on if d in never_built and d not in step.optional]
            outdated = [d for d in step.depends_on if d in stale]
            if step.id not in selected:
                results[step.id] = self._recorded(step, outdated, stale, never_built)
            elif outdated:
                results[step.id] = _refuse_outdated(step, {d: stale[d] for d in outdated}, results)
            elif bad:
                cause = results[bad[0]]
                why = f"dependency {bad[0]} {cause.status}" + (
                    " (" + cause.reason.splitlines()[0] + ")" if cause.status == "failed" and cause.reason else ""
                )
                results[step.id] = StepResult(step.id, step.stage.value, "skipped", why)
            elif unbuilt:
                results[step.id] = StepResult(
                    step.id,
                    step.stage.value,
                    "skipped",
                    f"dependency {unbuilt[0]} was never built (run without --only/--from first)",
                )
            elif stopped:
                results[step.id] = StepResult(
                    step.id, step.stage.value, "skipped", f"not run: {stopped} failed (use --keep-going)"
                )
            else:
                results[step.id] = self._step(step)
                if results[step.id].status == "failed" and not self.keep_going:
                    stopped = step.id
            self.report(results[step.id].line())
        self.cache.save()
        return BuildResult(self.dir, list(results.values()), started, round(time.monotonic() - t0, 3))

    def _recorded(self, step: Step, outdated: list[str], stale: dict[str, str], never_built: set[str]) -> StepResult:
        """A step not selected: its stamp's outputs stand in for it; noted in `stale` (with why) when they no
        longer fit its inputs, in `never_built` when there is no stamp."""
        stamp = _read_stamp(self._stamp_path(step))
        if stamp is None:
            never_built.add(step.id)
        elif why := (f"its input {outdated[0]} is out of date" if outdated else self._stale(step, stamp)):
            stale[step.id] = why
        self.outputs[step.id] = stamp.get("outputs", {}) if stamp else {}
        self.files[step.id] = _digests(stamp)
        return StepResult(
            step.id,
            step.stage.value,
            "not-selected",
            key=stamp.get("key") if stamp else None,
            outputs=self.outputs[step.id],
        )

    def _stamp_path(self, step: Step) -> Path:
        return self.state / "steps" / f"{step.id}.json"

    def _components(self, step: Step, fingerprint: dict[str, Any] | None, code: str) -> dict[str, str]:
        deps = {d: {"outputs": self.outputs.get(d, {}), "files": self.files.get(d, {})} for d in step.depends_on}
        return keys.components(
            step, profile=self.profile, deps=deps, fingerprint=fingerprint, code=code, trtllm=self.trtllm, gpu=self.gpu
        )

    def _stale(self, step: Step, stamp: dict[str, Any]) -> str | None:
        """Why a step's recorded output no longer fits this profile and its inputs' recorded outputs (None: it
        does). A new specdeploy version, other checkpoint bytes or another measuring machine do not count: the
        recorded output still belongs to this profile."""
        now = {
            k: v
            for k, v in self._components(step, None, "").items()
            if k in keys.PROFILE_PARTS or k.startswith(keys.OUTPUT_OF)
        }
        before = {k: v for k, v in stamp.get("components", {}).items() if k in now}
        if before == now:
            return None
        return keys.rebuild_reason({**stamp, "components": before}, now, self.profile)

    def _fingerprint(self, step: Step) -> dict[str, Any] | None:
        if step.action != "fetch":
            return None
        return fingerprint(dict(step.params), self.resolved.profile.runtime.backend, self.cache)

    def _step(self, step: Step) -> StepResult:
        log_path = self.state / "logs" / f"{step.id}.log"
        result = StepResult(step.id, step.stage.value, "failed", started_at=_now(), log=str(log_path))
        t0 = time.monotonic()
        try:
            fingerprint = self._fingerprint(step)
            parts = self._components(step, fingerprint, code_hash(step.action))
            parts.update({name: keys.canonical_hash(v) for name, v in runtime_inputs(step, self.resolved).items()})
            key = keys.cache_key(parts)
            result.key = key
            stamp = _read_stamp(self._stamp_path(step))
            forced = any(_matches(step, f) for f in self.force)
            if stamp and stamp.get("key") == key and not forced:
                damaged = verify_outputs(self.dir, stamp.get("files", {}), self.cache)
                if not damaged:
                    self.outputs[step.id] = stamp.get("outputs", {})
                    self.files[step.id] = _digests(stamp)
                    result.status, result.log = "reused", stamp.get("log")
                    result.outputs = self.outputs[step.id]
                    return result
                reason = f"output {damaged} changed or missing"
            elif stamp:
                reason = (
                    "forced"
                    if forced and stamp.get("key") == key
                    else keys.rebuild_reason(stamp, parts, self.profile, fingerprint)
                )
            else:
                reason = ""
            self.needs(step, self.resolved)
            if step.stage.value in LONG_STAGES:
                self.report(f"{step.id:<20} started: {step.description} (log {log_path})")
            log_path.parent.mkdir(parents=True, exist_ok=True)
            log_path.write_text(f"# step {step.id} ({step.description}) at {result.started_at}\n")
            outputs, files = self._execute(step, key, log_path, forced)
            stamp_data = {
                "schema_version": 1,
                "step": step.id,
                "key": key,
                "components": parts,
                "profile": keys.flatten(self.profile),
                "fingerprint": fingerprint,
                "outputs": outputs,
                "files": files,
                "finished_at": _now(),
                "log": str(log_path),
            }
            write_json_atomic(self._stamp_path(step), stamp_data)  # last: the step now counts as done
            if stamp:
                _remove_stale(self.dir, stamp.get("files", {}), files)
            self.outputs[step.id] = outputs
            self.files[step.id] = _digests(stamp_data)
            result.status, result.reason, result.outputs = ("rebuilt" if stamp else "built"), reason, outputs
        except SpecdeployError as exc:
            result.reason = str(exc)
        except OSError as exc:  # the log or the stamp: a full disk, a read-only folder
            result.reason = f"{step.id}: {type(exc).__name__}: {exc}"
        finally:
            result.duration_s = round(time.monotonic() - t0, 3)
        return result

    def _execute(self, step: Step, key: str, log_path: Path, forced: bool) -> tuple[dict[str, Any], dict[str, Any]]:
        (self.state / "tmp").mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f"{step.id}-", dir=self.state / "tmp"))
        try:
            if step.action:
                action = load_action(step.action)
                ctx = ActionContext(
                    self.resolved,
                    self.plan,
                    step,
                    self.dir,
                    _FileLog(log_path),
                    dict(self.outputs),
                    out_dir=staging,
                    log_path=log_path,
                    force=forced,
                    hash_cache=self.cache,
                    report=self.report,
                )
                outputs = action(ctx)
                if not isinstance(outputs, dict):
                    raise StepFailed(f"action '{step.action}' returned {type(outputs).__name__}, not a dict")
                json.dumps(outputs, allow_nan=False)  # must be JSON-able: it goes into the stamp
            elif step.argv:
                outputs = self._run_argv(step, key, staging, log_path)
            else:
                outputs = {}
            files = swap_in(staging, self.dir, self.cache, set(stamped_files(self.dir)))
        except SpecdeployError:
            raise
        except (TypeError, ValueError, OSError) as exc:
            raise StepFailed(f"{step.id}: {type(exc).__name__}: {exc}", hint=f"log: {log_path}") from exc
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return outputs, files

    def _run_argv(self, step: Step, key: str, staging: Path, log_path: Path) -> dict[str, Any]:
        rel = f"{step.params.get('out', 'engines')}/{step.id}-{key[:12]}"
        (staging / rel).mkdir(parents=True)
        argv = resolve_argv(step.argv, out=staging / rel, artifact_dir=self.dir, outputs=self.outputs)
        timeout = step.params.get("timeout_s")
        run_process(
            argv,
            log_path=log_path,
            env=child_env(step.env),
            cwd=staging,
            timeout=timeout,
            step_id=step.id,
            heartbeat=lambda s: self.report(f"{step.id:<20} still running ({elapsed(s)})"),
        )
        return {"dir": rel, "argv": [a.replace(str(staging / rel), str(self.dir / rel)) for a in argv]}


def _refuse_outdated(step: Step, outdated: dict[str, str], results: dict[str, StepResult]) -> StepResult:
    """A selected step whose unselected inputs are out of date: refused before anything is written (a usage
    error), else skipped, so the artifact never claims the new profile over outputs built for another."""
    why = "; ".join(f"{d}: {reason}" for d, reason in outdated.items())
    if not any(r.status in ("built", "rebuilt", "failed") for r in results.values()):
        raise UsageError(
            f"{step.id} would build on out-of-date recorded outputs ({why}), and the artifact would "
            "claim the new profile",
            hint=f"select those steps too (--only {' --only '.join(outdated)}), or build without --only/--from",
        )
    return StepResult(step.id, step.stage.value, "skipped", f"dependency out of date ({why})")


def _remove_stale(root: Path, old: dict[str, Any], new: dict[str, Any]) -> None:
    """A rebuilt step's previous outputs that it no longer writes (e.g. `engines/<step>-<old key>/`): left
    behind they would be files no manifest lists, which `verify` reports as drift."""
    for rel in set(old) - set(new):
        path = root / rel
        if not path.resolve().is_relative_to(root.resolve()):
            continue  # a tampered stamp never deletes outside the artifact folder
        path.unlink(missing_ok=True)
        for parent in path.parents:
            if parent == root or not parent.is_dir() or any(parent.iterdir()):
                break
            parent.rmdir()


def _digests(stamp: dict[str, Any] | None) -> dict[str, str]:
    return {rel: rec[2] for rel, rec in (stamp or {}).get("files", {}).items()}


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
