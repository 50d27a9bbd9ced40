"""`specdeploy serve`: a local tritonserver for a rendered repository, stopped cleanly. It serves a private copy
of what passed the gate (serve/sealed.py: `verify` for a built artifact), the models its manifest names, and
no request can load, unload or replace a model afterwards (render/server.py `SEALED`). docs/serving.md.

The endpoint is recorded in `<artifact>/.specdeploy/serve.json` so `specdeploy ask` finds it; a record whose
tritonserver is gone (a killed `serve`) is stale and said so.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from specdeploy._io import write_json_atomic
from specdeploy.boundedio import InputError, read_json
from specdeploy.errors import StepFailed, UsageError
from specdeploy.execute.served import STATE, recorded
from specdeploy.plugin.registry import layout_named
from specdeploy.render.backends import prepare_backends
from specdeploy.render.context import MANIFEST
from specdeploy.render.server import TritonServer, start_server
from specdeploy.runtime_paths import cache_dir
from specdeploy.serve.openai_chat import tokenizer_of
from specdeploy.serve.openai_frontend import Input, Served
from specdeploy.serve.sealed import gate, seal

SERVED = Path(".specdeploy") / "served"  # the copy tritonserver serves (serve/sealed.py), removed at stop


@dataclass(frozen=True)
class Repository:
    """A rendered repository: its folder, the folder that owns it (artifact or repo) and its models."""

    root: Path
    owner: Path
    layout: str
    models: tuple[str, ...]
    claim: int | None = None  # the fd holding `.specdeploy/serve.lock` while served
    server_env: dict[str, str] | None = None


def find_repository(path: Path) -> Repository:
    """`path` is an artifact folder (holding `triton/`) or a repository itself."""
    root = path / "triton" if (path / "triton" / MANIFEST).is_file() else path
    if not (root / MANIFEST).is_file():
        raise UsageError(
            f"{path} holds no rendered Triton repository ({MANIFEST} not found)",
            hint="run `specdeploy build PROFILE` or `specdeploy render PROFILE` first",
        )
    try:
        manifest = read_json(root / MANIFEST)
    except (OSError, InputError) as exc:
        why = exc.detail if isinstance(exc, InputError) else exc
        raise UsageError(f"{root / MANIFEST} is unreadable: {why}", hint="render the repository again") from None
    listed = manifest.get("models") if isinstance(manifest, dict) else None
    if not isinstance(listed, list) or not listed or not all(isinstance(m, str) for m in listed):
        raise UsageError(
            f"{root / MANIFEST} names no models to serve (rendered by an older specdeploy?)",
            hint="render the repository again (`specdeploy build` or `specdeploy render`)",
        )
    missing = [m for m in listed if not (root / m / "config.pbtxt").is_file()]
    if missing:
        raise UsageError(
            f"{root} lacks the model folders its manifest names: {', '.join(missing)}",
            hint=f"`specdeploy check-repo {root}`",
        )
    models = sorted(listed, key=lambda m: m == "ensemble")  # the entry model last, as `serve` reports them
    env = manifest.get("server_env")
    return Repository(
        root,
        path,
        str(manifest.get("layout", "unknown")),
        tuple(models),
        server_env=env if isinstance(env, dict) else None,
    )


def start(
    path: Path,
    *,
    report: Callable[[str], None] = lambda _: None,
    load_timeout: float = 300.0,
    openai_port: int | None = None,
) -> tuple[Repository, TritonServer]:
    """Start tritonserver on 127.0.0.1, load the manifest's models, record the endpoint; the caller stops it.
    With `openai_port` (0: any free port) an OpenAI-compatible endpoint fronts the entry model too."""
    repo = find_repository(path)
    repo = replace(repo, claim=claim(repo.owner))
    server = None
    try:
        files = gate(repo.root, repo.models, report)
        served = seal(repo.root, files, repo.owner / SERVED)
        layout = layout_named(repo.layout)
        if layout is not None and layout.serve_note:
            report(layout.serve_note)
        report("preparing the python backend (first time: installs numpy<2 for the backend stub) ...")
        backends = prepare_backends(cache_dir())
        log_path = repo.owner / ".specdeploy" / "tritonserver.log"
        report(f"loading {', '.join(repo.models)} ...")
        server = start_server(served, backends, log_path, env=repo.server_env, sealed=True, timeout=load_timeout)
        client = server.client()
        failed = [m for m in repo.models if not client.is_model_ready(m, client_timeout=30)]
        if failed:
            raise StepFailed(
                f"tritonserver could not load {', '.join(failed)}:\n{_why(server.log(), failed)}",
                hint=f"server log: {log_path}",
            )
        record = {
            "pid": server.process.pid,
            "grpc": server.grpc_url,
            "http": f"127.0.0.1:{server.http_port}",
            "layout": repo.layout,
            "models": list(repo.models),
            "log": str(log_path),
        }
        if openai_port is not None:
            server.frontend = start_frontend(server, entry_model(list(repo.models)), openai_port)
            record["openai"] = server.frontend.url
        write_json_atomic(repo.owner / STATE, record, private=True)
    except BaseException:
        stop(repo, server)
        raise
    return repo, server


def _why(log: str, models: list[str]) -> str:
    """Triton's reasons (its `failed to load 'M'` lines, unescaped), else the log's tail."""
    lines = [
        line.split('] "', 1)[-1].rstrip('"').replace("\\n", "\n")
        for line in log.splitlines()
        if any(f"failed to load '{m}'" in line for m in models)
    ]
    return "\n".join(lines)[-3000:] if lines else log[-2000:]


def entry_model(models: list[str]) -> str:
    """The model a client talks to: the ensemble where there is one, else the (first) model."""
    return "ensemble" if "ensemble" in models else models[0]


def start_frontend(server: TritonServer, model: str, port: int) -> Any:
    """The OpenAI-compatible endpoint on 127.0.0.1:`port` for `model` (talking to it over gRPC), described by its
    metadata (the inputs /generate would have built), its config and its repository (the layout, where the
    tokenizer that renders chat lives)."""
    from specdeploy.serve.openai_server import Frontend

    client = server.client()

    def config_of(name: str) -> dict[str, Any]:
        return dict(client.get_model_config(name, as_json=True, client_timeout=30)["config"])

    config = config_of(model)
    try:
        layout = find_repository(server.repo).layout
    except UsageError:  # a repository without specdeploy's manifest: chat stays single-turn
        layout = "unknown"
    metadata = client.get_model_metadata(model, as_json=True, client_timeout=30)
    inputs = {i["name"]: Input(i["datatype"], tuple(int(d) for d in i.get("shape", []))) for i in metadata["inputs"]}
    served = Served(
        server.grpc_url,
        model,
        inputs,
        bool(config.get("model_transaction_policy", {}).get("decoupled")),
        layout,
        tokenizer_of(server.repo, layout, model, config_of),
    )
    try:
        return Frontend(served, "127.0.0.1", port).start()
    except OSError as exc:
        raise UsageError(
            f"the OpenAI endpoint cannot listen on 127.0.0.1:{port}: {exc.strerror}",
            hint="pick another --openai-port (0: any free port)",
        ) from None


def stop(repo: Repository, server: TritonServer | None) -> None:
    """Stop the server (and its OpenAI endpoint), drop its record, release the folder."""
    if server is not None:
        if server.frontend is not None:
            server.frontend.stop()
        server.stop()
    release(repo.owner, repo.claim)


def release(owner: Path, claim: int | None) -> None:
    """After the server stopped: drop its record and the copy it served, let go of the folder."""
    (owner / STATE).unlink(missing_ok=True)
    shutil.rmtree(owner / SERVED, ignore_errors=True)
    if claim is not None:
        os.close(claim)


def claim(owner: Path) -> int:
    """Hold `.specdeploy/serve.lock` for this `serve`'s life (the OS drops it when the process dies, however):
    a second `serve` of the same folder is told where the first one serves."""
    try:
        (owner / STATE).parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(owner / STATE.with_name("serve.lock"), os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise UsageError(
            f"cannot write under {owner}: {exc.strerror}",
            hint="`serve` records its endpoint and log in ARTIFACT_DIR/.specdeploy/: serve a writable copy",
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        running = recorded(owner)
        where = (
            f"{running.get('process', 'tritonserver')} pid {running['pid']}, "
            + ", ".join(f"{k} {running[k]}" for k in ("grpc", "http", "openai") if k in running)
            if running
            else "still loading its models"
        )
        raise UsageError(
            f"{owner} is already served by another `specdeploy serve` ({where})",
            hint="ask that one (`specdeploy ask PROMPT --artifact DIR`) or stop it first",
        ) from None
    recorded(owner)  # nobody serves this folder: a record left behind is stale
    return fd


def endpoint_of(path: Path) -> dict[str, object]:
    """What a live `serve` recorded for an artifact or repository folder."""
    for owner in (path, path.parent):
        if (owner / STATE).exists():
            state = recorded(owner)
            if state is None:
                raise UsageError(
                    f"{owner / STATE} is stale: the server it names is not running",
                    hint="start it again with `specdeploy serve ARTIFACT_DIR` (the stale record was removed)",
                )
            return state
    raise UsageError(
        f"no running `specdeploy serve` recorded under {path}",
        hint="start one with `specdeploy serve ARTIFACT_DIR`, or pass --url HOST:PORT --model NAME",
    )
