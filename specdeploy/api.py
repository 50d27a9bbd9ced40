"""One public function per CLI command, usable without click (tests and CI scripts call these)."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from specdeploy.errors import UsageError
from specdeploy.issues import Issue, ProfileError
from specdeploy.profile.loader import load_profile
from specdeploy.resolve.resolved import Resolved
from specdeploy.resolve.resolver import resolve

if TYPE_CHECKING:  # `validate` never needs these modules
    from types import FrameType

    from specdeploy.deploy.render import DeployReport
    from specdeploy.execute.runner import BuildResult
    from specdeploy.execute.verify import VerifyReport
    from specdeploy.plan.model import Plan
    from specdeploy.plugin.engine import Generation
    from specdeploy.plugin.matrix import MatrixRow
    from specdeploy.profile.shipped import ShippedProfile
    from specdeploy.render.check_pbtxt import RepoCheck
    from specdeploy.render.writer import RenderReport
    from specdeploy.resolve.probe import DoctorReport, EnvironmentProbe
    from specdeploy.serve.client import Answer
    from specdeploy.tune.result import TuneResult


@dataclass(frozen=True)
class Validation:
    """The outcome for one profile file: its errors, or its warnings and skipped checks."""

    source: str
    errors: tuple[Issue, ...]
    notes: tuple[Issue, ...]

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_dict(self) -> dict[str, object]:
        return {
            "source": self.source,
            "ok": self.ok,
            "errors": [i.to_dict() for i in self.errors],
            "notes": [n.to_dict() for n in self.notes],
        }


def load_and_resolve(
    source: str, sets: tuple[str, ...] = (), *, probe: EnvironmentProbe | None = None, online: bool = False
) -> Resolved:
    """Load, validate and resolve a profile; raises ProfileError with every located error."""
    return resolve(load_profile(source, sets), probe=probe, online=online)


def validate(sources: list[str], sets: tuple[str, ...] = ()) -> list[Validation]:
    """Schema, options and every cross-field rule; nothing is fetched or probed."""
    results = []
    for source in sources:
        try:
            resolved = load_and_resolve(source, sets)
        except ProfileError as exc:
            results.append(Validation(source, tuple(exc.issues), ()))
        else:
            results.append(Validation(source, (), resolved.notes))
    return results


def plan(source: str, sets: tuple[str, ...] = ()) -> tuple[Resolved, Plan]:
    """The resolved profile and the steps a build would run (pure: nothing written)."""
    from specdeploy.plan.planner import make_plan

    resolved = load_and_resolve(source, sets)
    return resolved, make_plan(resolved)


def dry_run(
    source: str, sets: tuple[str, ...] = (), *, only: tuple[str, ...] = (), start: str | None = None
) -> tuple[Resolved, Plan, dict[str, str], list[str]]:
    """What `build --dry-run` shows: the plan, the text of the files the emit step would write (the LLM-API
    YAML, serve.sh) and the steps `--only`/`--from` select (refused as the build refuses them); nothing written,
    nothing fetched."""
    from specdeploy.execute.runner import select
    from specdeploy.plan.planner import make_plan
    from specdeploy.plugin.registry import get_engine

    resolved = load_and_resolve(source, sets)
    the_plan = make_plan(resolved)
    chosen = select(the_plan, only, start)
    preview = get_engine(resolved.profile.runtime.backend).preview(resolved)
    return resolved, the_plan, preview, [s.id for s in the_plan.steps if s.id in chosen]


def profiles_list() -> list[ShippedProfile]:
    from specdeploy.profile.shipped import listed

    return listed()


def profile_show(name: str) -> str:
    from specdeploy.profile.shipped import find_shipped, shipped_hint

    path = find_shipped(name)
    if path is None:
        raise UsageError(f"no shipped profile named '{name}'", hint=shipped_hint(name))
    return path.read_text()


def profile_copy(name: str, dest: Path, *, force: bool = False) -> Path:
    """Copy a shipped profile to start your own: into `dest` when it is a folder or names no .yaml/.yml file
    (created if missing), else to that file; never overwrites unless asked, and a link in the file's place is
    replaced, never written through."""
    from specdeploy._io import write_bytes_atomic
    from specdeploy.profile.shipped import find_shipped, shipped_hint

    path = find_shipped(name)
    if path is None:
        raise UsageError(f"no shipped profile named '{name}'", hint=shipped_hint(name))
    try:  # any OSError (a file in the way, read-only, a name too long) is the destination's fault
        into = dest.is_dir() or dest.suffix not in (".yaml", ".yml")  # `copy NAME dir/`: dir/NAME.yaml, created
        target = dest / path.name if into else dest
        if (target.exists() or target.is_symlink()) and not force:
            raise UsageError(f"{target} exists", hint="pass --force to overwrite")
        write_bytes_atomic(target, path.read_bytes())
    except OSError as exc:
        raise UsageError(
            f"cannot write {str(dest)[:200]}: {exc.strerror or exc}",
            hint="DEST must be a folder (or a .yaml file) in a writable place",
        ) from None
    return target


def doctor() -> DoctorReport:
    """Versions and what this machine can do: NVML/GPUs, each engine, tritonserver, the Triton Python stub."""
    import platform

    from specdeploy import __version__
    from specdeploy.plugin.registry import engines
    from specdeploy.render.backends import stub_report
    from specdeploy.resolve.probe import DoctorReport, probe_environment

    probe = probe_environment()
    found: dict[str, str] = {}
    lacking: list[str] = []
    for engine in engines().values():
        lines, needs = engine.doctor(probe)
        found.update(lines)
        lacking += needs
    missing = [
        *([] if probe.driver else ["NVIDIA driver"]),
        *([] if probe.gpu_names else ["NVIDIA GPU"]),
        *dict.fromkeys(lacking),
    ]
    return DoctorReport(
        specdeploy=__version__,
        python=platform.python_version(),
        gpus=[
            {"name": n, "memory_gib": round(m / 1024**3, 1)}
            for n, m in zip(probe.gpu_names, probe.gpu_memory_bytes, strict=True)
        ],
        driver=probe.driver or "no NVIDIA driver",
        nvml=probe.nvml_error or "ok",
        engines=found,
        tritonserver=probe.tritonserver or "not found (pip install 'specdeploy[triton]')",
        triton_python_stub=stub_report(),
        missing=missing,
    )


def mechanisms() -> list[MatrixRow]:
    """The mechanism x backend x version matrix, from the installed plugins."""
    from specdeploy.plugin.matrix import matrix

    return matrix()


def build(
    source: str,
    sets: tuple[str, ...] = (),
    *,
    out: Path = Path("artifacts"),
    only: tuple[str, ...] = (),
    start: str | None = None,
    keep_going: bool = False,
    tune: bool = False,
    lock_timeout: float | None = None,
    report: Callable[[str], None] | None = None,
) -> BuildResult:
    """Run a profile's plan into `out/<profile>/` (cached steps reused); `report` hears each step's progress."""
    from specdeploy.execute.artifact import check_folder
    from specdeploy.execute.build import run_build
    from specdeploy.execute.runner import select
    from specdeploy.plan.planner import make_plan

    offline = load_and_resolve(source, sets)  # profile, --only/--from and --out refused before the hub is asked
    select(make_plan(offline), only, start)  # the steps are the profile's; only their arguments need the model
    check_folder(out, offline.loaded.name)
    resolved = load_and_resolve(source, sets, online=True)
    from specdeploy.plugin.registry import get_engine

    get_engine(resolved.profile.runtime.backend).check_installed(resolved)  # the pinned release is the installed one
    the_plan = make_plan(resolved)
    force = tuple(s.id for s in the_plan.steps if s.stage.value == "tune") if tune else ()
    if tune and not force:
        raise UsageError(
            "--tune: this profile has no tune step (draft_len is fixed or a schedule is given)",
            hint="set speculative.draft_len: auto and drop speculative.schedule",
        )
    return run_build(
        the_plan,
        resolved,
        out,
        only=only,
        start=start,
        keep_going=keep_going,
        force=force,
        lock_timeout=lock_timeout,
        report=report or (lambda _: None),
    )


def verify(artifact_dir: Path) -> VerifyReport:
    """The artifact folder's integrity: a valid manifest of a build that succeeded, every file as recorded and
    none unlisted, a lock that belongs to it; lists drift and problems."""
    from specdeploy.execute.verify import verify as verify_artifacts

    return verify_artifacts(artifact_dir)


def render(
    source: str, sets: tuple[str, ...] = (), *, out: Path = Path("artifacts"), pretend: bool = False
) -> RenderReport:
    """Render the profile's Triton repository into `out/<profile>/triton` (as `build --out out` does), from what a
    build or tune of this very profile recorded there; checked, swapped in atomically under the folder's lock.
    Returns the RenderReport (per-file create/identical/changed/delete)."""
    from specdeploy.execute.recorded import artifact_for, recorded_outputs
    from specdeploy.plan.planner import needs_tune
    from specdeploy.render.actions import render_built

    resolved = load_and_resolve(source, sets)
    with artifact_for(resolved, out, "triton", pretend=pretend) as folder:
        outputs, note = recorded_outputs(resolved, folder)
        report = render_built(resolved, outputs, folder / "triton", pretend=pretend)
    if note and not outputs:
        report.warnings.append(note)
    if needs_tune(resolved) and "tune.draft_len" not in outputs:  # say what this repository serves instead
        report.warnings.append(
            f"speculative.draft_len is auto, which only a tune decides: this render serves a fixed K = "
            f"{resolved.draft_len} (the most the profile plans for) with no schedule. `specdeploy build` (or `tune`) "
            "into the same --out records the tuned schedule, which render then uses; or set speculative.draft_len "
            "(or --set speculative.draft_len=N) to choose K"
        )
    return report


def render_deploy(
    source: str,
    targets: tuple[str, ...],
    sets: tuple[str, ...] = (),
    *,
    out: Path = Path("artifacts"),
    pretend: bool = False,
) -> DeployReport:
    """Render deploy targets (container, k8s, slurm) into `out/<profile>/deploy/<target>/` (as `build` does),
    checked offline when the checkers are installed; returns the DeployReport."""
    from specdeploy.deploy.actions import render_deploy_resolved
    from specdeploy.execute.recorded import artifact_for

    resolved = load_and_resolve(source, sets)
    with artifact_for(resolved, out, "deploy", pretend=pretend) as folder:
        return render_deploy_resolved(resolved, targets, folder / "deploy", pretend=pretend)


def check_deploy(path: Path) -> list[str]:
    """Every problem in a rendered deploy folder: Kubernetes and LeaderWorkerSet schemas, shellcheck, Dockerfile."""
    from specdeploy.boundedio import walk
    from specdeploy.deploy.check import check_files
    from specdeploy.render.context import MANIFEST

    if not path.is_dir():
        raise UsageError(f"{path} is not a folder")
    if (path / MANIFEST).is_file():
        raise UsageError(
            f"{path} is a Triton repository, not rendered deploy files",
            hint="pass OUT/<profile>/deploy (what `render --target` and `build` write); "
            "`specdeploy check-repo` checks a Triton repository",
        )
    files = {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(walk(path)) if p.is_file()}
    problems, checked = check_files(files) if files else ([], "")
    if not checked:  # nothing there is a deploy file: "no problems" would be untrue
        raise UsageError(
            f"{path} holds no deploy files (Kubernetes YAML, shell scripts, a Dockerfile)",
            hint="run `specdeploy render PROFILE --target ...`, or pass the folder it wrote",
        )
    return problems


def check_repo(path: Path) -> RepoCheck:
    """Every problem in a Triton model repository (Triton's schema and load-time rules, specdeploy's own)."""
    from specdeploy.render.check import check_repo as check
    from specdeploy.render.check_pbtxt import RepoCheck

    if not path.is_dir():
        raise UsageError(f"{path} is not a folder")
    return RepoCheck(path, tuple(check(path)))


def tune(
    source: str,
    sets: tuple[str, ...] = (),
    *,
    backend: str = "auto",
    out: Path = Path("artifacts"),
    strategy: str = "factorized",
    fresh: bool = False,
    progress: bool = False,
    say: Callable[[str], None] | None = None,
    warn: Callable[[str], None] | None = None,
    ray: bool = False,
    ray_address: str | None = None,
) -> TuneResult:
    """Tune the draft length per concurrency into `out/<profile>/tune/result.json` (+ report) and
    specdeploy.lock; resumes from the checkpoint unless `fresh`. Raises StepFailed (exit 1) after writing
    when the SLA is unreachable or the schedule collapses under mixed concurrency. `progress`: a live bar;
    `say`: one line per measurement instead (logs, CI); `warn`: told when `auto` falls back to predictions.
    `ray`/`ray_address`: the points run as Ray tasks on this machine or that cluster, at most `tune.parallel` at
    once, each reserving its TP x PP GPUs."""
    from specdeploy.execute.artifact import artifact_folder, artifact_lock, check_folder
    from specdeploy.tune.run import check_tune, raise_problems, record_in_lock, tune_resolved

    resolved = load_and_resolve(source, sets)
    name = resolved.loaded.name
    check_folder(out, name)
    check_tune(resolved, backend, strategy)  # before the folder is made: a refused tune leaves nothing behind
    artifact_dir = artifact_folder(out, name)
    with artifact_lock(artifact_dir, name, report=say or (lambda _: None)):  # a build into it waits, and vice versa
        res = tune_resolved(
            resolved,
            artifact_dir,
            backend=backend,
            strategy=strategy,
            fresh=fresh,
            progress=progress,
            say=say,
            warn=warn,
            ray=ray,
            ray_address=ray_address,
        )
        record_in_lock(res, artifact_dir)
    raise_problems(res)
    return res


def serve(
    path: Path,
    *,
    report: Callable[[str], None] | None = None,
    openai_port: int | None = 8000,
    engine_args: tuple[str, ...] = (),
) -> None:
    """Serve a built artifact or rendered repository on 127.0.0.1 until Ctrl-C, SIGTERM or SIGHUP (a closed
    terminal), or until the server dies, then stop it cleanly (it also gets a parent-death signal, for SIGKILL).
    tritonserver, with an OpenAI-compatible endpoint fronting the entry model on `openai_port` (None: none), or
    the engine's own server where the engine serves itself (vLLM's, on `openai_port`, given `engine_args`)."""
    from specdeploy.errors import StepFailed
    from specdeploy.execute.process import exited
    from specdeploy.serve.own import start

    say = report or (lambda _: None)
    stops = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {sig: signal.signal(sig, _interrupt) for sig in stops}
    try:
        running = start(path, report=say, openai_port=openai_port, engine_args=engine_args)
        say(running.summary)
        try:
            while (code := exited(running.process)) is None:
                time.sleep(0.5)
            raise StepFailed(f"{running.what} exited ({code})", hint=running.log()[-2000:])
        except KeyboardInterrupt:
            say(f"stopping {running.what} ...")
        finally:
            running.stop()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _interrupt(_signum: int, _frame: FrameType | None) -> None:
    """SIGTERM (a service manager, `kill`) and SIGHUP (the terminal closed) stop `serve` the way Ctrl-C does."""
    raise KeyboardInterrupt


def ask(
    prompt: str,
    *,
    artifact: Path | None = None,
    url: str | None = None,
    model: str | None = None,
    max_tokens: int = 64,
    draft_len: int | None = None,
) -> Answer:
    """Send one prompt to a model served by `specdeploy serve` (found through ARTIFACT) or at URL; `draft_len`
    overrides the served draft length for this request (reference layout)."""
    from specdeploy.serve.client import ask as send
    from specdeploy.serve.local import endpoint_of, entry_model
    from specdeploy.serve.own import answer

    if not prompt.strip():
        raise UsageError("the prompt is empty")
    _check_utf8(prompt)
    if url is None or model is None:
        try:
            state = endpoint_of(artifact or Path())
        except UsageError:
            if url is None:
                raise
            raise UsageError(
                f"--url needs --model: no `specdeploy serve` recorded under {artifact or Path()} names "
                "the model at that endpoint",
                hint=f"e.g. --url {url} --model smollm2",
            ) from None
        models = [str(m) for m in state["models"]]  # type: ignore[attr-defined]
        model = model or entry_model(models)
        if url is None:
            spoken = answer(state, prompt, model=model, max_tokens=max_tokens, draft_len=draft_len)
            if spoken is not None:
                return spoken
            url = str(state["grpc"])
    return send(url, model, prompt, max_tokens=max_tokens, draft_len=draft_len)


def _check_utf8(prompt: str) -> None:
    """A shell argument that is not UTF-8 arrives with surrogate escapes and cannot be sent."""
    try:
        prompt.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise UsageError(f"the prompt is not valid UTF-8 text (byte {exc.start})") from None


def generate(
    source: str, prompt: str, sets: tuple[str, ...] = (), *, artifact: Path | None = None, max_tokens: int = 64
) -> Generation:
    """Answer PROMPT with the reference runtime in this process: the same call the reference Triton model makes.

    The draft length is the tuned one when ARTIFACT (a build of this profile) holds a tune result, else the
    profile's fixed `draft_len`, else the mechanism's default.
    """
    from specdeploy.boundedio import read_json
    from specdeploy.plugin.registry import get_engine

    if not prompt.strip():
        raise UsageError("the prompt is empty")
    _check_utf8(prompt)
    resolved = load_and_resolve(source, sets)
    profile = resolved.profile
    engine = get_engine(profile.runtime.backend)
    if not engine.in_process:
        raise UsageError(
            f"`generate` runs the CPU reference runtime; {source} uses the {profile.runtime.backend} backend",
            hint="serve it with `specdeploy serve` on a GPU machine and use `specdeploy ask`",
        )
    spec, mechanism = profile.speculative, resolved.loaded.mechanism
    k = spec.draft_len if isinstance(spec.draft_len, int) else (mechanism.default_draft_len if mechanism else 0)
    lock = artifact / "specdeploy.lock" if artifact else None
    if lock is not None and lock.is_file():
        try:
            tuned = read_json(lock).get("tuned") or {}
        except (OSError, ValueError, AttributeError) as exc:
            raise UsageError(f"{lock} is not a lock specdeploy wrote: {exc}") from None
        schedule = {int(c): int(v) for c, v in (tuned.get("schedule") or {}).items()}
        k = schedule[min(schedule)] if schedule else k
    name = spec.mechanism if k > 0 else "none"
    return engine.generate(resolved, prompt, mechanism=name, draft_len=k, max_tokens=max_tokens)
