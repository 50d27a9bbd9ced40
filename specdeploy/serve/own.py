"""`specdeploy serve` of a built artifact whose engine serves it itself (`Engine.serves_itself`: vLLM's OpenAI
server), and the one place `serve` chooses between that and tritonserver (serve/local.py). docs/serving.md.

The same guarantees as the Triton path: the artifact must pass `verify`; the engine runs on a private copy of the
files its manifest lists, each hashed as it is copied (serve/sealed.py); it listens on 127.0.0.1 only; its endpoint
is recorded in `<artifact>/.specdeploy/serve.json` (0600) once it answers, for `specdeploy ask`; the folder is held
(`serve.lock`) so a second `serve` is told where the first one serves; stopping removes the record and the copy.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specdeploy._io import write_json_atomic
from specdeploy.boundedio import InputError, read_json
from specdeploy.errors import UsageError
from specdeploy.execute.served import STATE
from specdeploy.plugin.engine import Engine, LocalServer
from specdeploy.serve.local import SERVED, claim, release
from specdeploy.serve.sealed import MANIFEST_NAME, seal, verified

if TYPE_CHECKING:
    from specdeploy.serve.client import Answer


@dataclass
class Running:
    """A started `serve`, whichever server it runs: what it says once ready, the process it waits on, its stop."""

    summary: str
    what: str
    process: subprocess.Popen[bytes]
    log: Callable[[], str]
    stop: Callable[[], None]


def engine_serving(path: Path) -> Engine | None:
    """The engine that serves the built artifact at `path` itself; None: tritonserver serves it (a repository, or
    an artifact whose engine has a Triton layout). Which artifact is good is `verify`'s to say, later."""
    from specdeploy.plugin.registry import engine_names, get_engine

    try:
        backend = read_json(path / MANIFEST_NAME).get("backend") if (path / MANIFEST_NAME).is_file() else None
    except (OSError, InputError, AttributeError):
        return None
    if not isinstance(backend, str) or backend not in engine_names():
        return None
    engine = get_engine(backend)
    return engine if engine.serves_itself else None


def start(
    path: Path,
    *,
    report: Callable[[str], None] = lambda _: None,
    openai_port: int | None = 8000,
    engine_args: tuple[str, ...] = (),
) -> Running:
    """Start what serves `path` on 127.0.0.1: its engine's own server, else tritonserver (serve/local.py)."""
    engine = engine_serving(path)
    if engine is None:
        return _triton(path, report, openai_port, engine_args)
    if openai_port is None:
        raise UsageError(
            f"--no-openai: {engine.product}'s server answers only its OpenAI-compatible API",
            hint="leave it out (--openai-port picks the port)",
        )
    held = claim(path)
    server: LocalServer | None = None
    try:
        manifest = verified(path)
        files = seal(path, dict(manifest["files"]), path / SERVED)
        name = str(manifest["profile"]["name"])
        log = path.resolve() / ".specdeploy" / f"{engine.name}-server.log"
        report(f"starting {engine.product}'s server for {name} (an engine start takes minutes on a CPU; log {log}) ...")
        server = engine.start_server(files, name=name, port=openai_port, log=log, args=engine_args)
        record = {"pid": server.process.pid, **server.record()}
        write_json_atomic(path / STATE, record, private=True)
    except BaseException:
        _stop(path, held, server)
        raise
    summary = (
        f"serving {name} with {engine.product}: OpenAI API {record['openai']} (/v1/chat/completions, "
        "/v1/completions, /metrics); Ctrl-C stops"
    )
    return Running(summary, f"{engine.product}'s server", server.process, server.log, lambda: _stop(path, held, server))


def _stop(owner: Path, held: int, server: LocalServer | None) -> None:
    if server is not None:
        server.stop()
    release(owner, held)


def _triton(
    path: Path, report: Callable[[str], None], openai_port: int | None, engine_args: tuple[str, ...]
) -> Running:
    from specdeploy.serve.local import start as start_triton
    from specdeploy.serve.local import stop

    if engine_args:
        raise UsageError(
            f"{path} is served by tritonserver, which takes no engine arguments ({' '.join(engine_args)})",
            hint="they are for an engine's own server (vLLM)",
        )
    repo, server = start_triton(path, report=report, openai_port=openai_port)
    openai = f", OpenAI API {server.frontend.url}" if server.frontend is not None else ""
    summary = (
        f"serving {', '.join(repo.models)} ({repo.layout} layout): grpc {server.grpc_url}, "
        f"http 127.0.0.1:{server.http_port}{openai}; Ctrl-C stops"
    )
    return Running(summary, "tritonserver", server.process, server.log, lambda: stop(repo, server))


def answer(state: dict[str, Any], prompt: str, *, model: str, max_tokens: int, draft_len: int | None) -> Answer | None:
    """`ask` of an endpoint recorded without gRPC (an engine's own OpenAI server); None: tritonserver's."""
    if "grpc" in state or not isinstance(state.get("openai"), str):
        return None
    if draft_len is not None:
        raise UsageError(
            f"{model} takes no per-request draft length ({state.get('process')} serves it)",
            hint="rebuild to change the served draft length",
        )
    from specdeploy.serve.openai_ask import ask_chat

    return ask_chat(str(state["openai"]), model, prompt, max_tokens=max_tokens)
