"""`serve` a built artifact, `ask` the served model, `generate` with the reference runtime in this process."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from specdeploy.api.profiles import load_and_resolve
from specdeploy.errors import UsageError

if TYPE_CHECKING:
    from types import FrameType

    from specdeploy.plugin.engine import Generation
    from specdeploy.serve.client import Answer


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
