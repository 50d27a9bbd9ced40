"""`specdeploy serve`: a local tritonserver for a rendered repository, the models its manifest names loaded
(explicit model control: a folder planted in the repository is never loaded), stopped cleanly.

The endpoint is recorded in `<artifact>/.specdeploy/serve.json` so `specdeploy ask` finds it; a record whose
tritonserver is gone (a killed `serve`) is stale and said so.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from specdeploy._io import write_json_atomic
from specdeploy.errors import StepFailed, UsageError
from specdeploy.render.backends import prepare_backends
from specdeploy.render.context import MANIFEST
from specdeploy.render.server import TritonServer, start_server
from specdeploy.runtime_paths import cache_dir

STATE = Path(".specdeploy") / "serve.json"


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
        raise UsageError(f"{path} holds no rendered Triton repository ({MANIFEST} not found)",
                         hint="run `specdeploy build PROFILE` or `specdeploy render PROFILE` first")
    try:
        manifest = json.loads((root / MANIFEST).read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"{root / MANIFEST} is unreadable: {exc}", hint="render the repository again") from None
    listed = manifest.get("models") if isinstance(manifest, dict) else None
    if not isinstance(listed, list) or not listed or not all(isinstance(m, str) for m in listed):
        raise UsageError(f"{root / MANIFEST} names no models to serve (rendered by an older specdeploy?)",
                         hint="render the repository again (`specdeploy build` or `specdeploy render`)")
    missing = [m for m in listed if not (root / m / "config.pbtxt").is_file()]
    if missing:
        raise UsageError(f"{root} lacks the model folders its manifest names: {', '.join(missing)}",
                         hint=f"`specdeploy check-repo {root}`")
    # composing models first: an ensemble loads only once its steps are ready
    models = sorted(listed, key=lambda m: m == "ensemble")
    env = manifest.get("server_env")
    return Repository(root, path, str(manifest.get("layout", "unknown")), tuple(models),
                      server_env=env if isinstance(env, dict) else None)


def start(path: Path, *, report: Callable[[str], None] = lambda _: None, load_timeout: float = 300.0,
          openai_port: int | None = None) -> tuple[Repository, TritonServer]:
    """Start tritonserver on 127.0.0.1, load the manifest's models, record the endpoint; the caller stops it.
    With `openai_port` (0: any free port) an OpenAI-compatible endpoint fronts the entry model too."""
    repo = find_repository(path)
    repo = replace(repo, claim=_claim(repo.owner))
    server = None
    try:
        if repo.layout == "engine":
            report("note: the engine layout needs the real tensorrtllm backend (NGC image with a GPU); "
                   "this local server has only the python backend")
        report("preparing the python backend (first time: installs numpy<2 for the backend stub) ...")
        backends = prepare_backends(cache_dir())
        log_path = repo.owner / ".specdeploy" / "tritonserver.log"
        server = start_server(repo.root, backends, log_path, env=repo.server_env)
        for model in repo.models:
            report(f"loading {model} ...")
            try:
                server.load(model, timeout=load_timeout)
            except Exception as exc:  # noqa: BLE001 - the server's reason is in its log
                raise StepFailed(f"tritonserver could not load '{model}': {exc}",
                                 hint=f"server log: {log_path}\n{server.log()[-2000:]}") from None
        record = {"pid": server.process.pid, "grpc": server.grpc_url, "http": f"127.0.0.1:{server.http_port}",
                  "layout": repo.layout, "models": list(repo.models), "log": str(log_path)}
        if openai_port is not None:
            server.frontend = start_frontend(server, entry_model(list(repo.models)), openai_port)
            record["openai"] = server.frontend.url
        write_json_atomic(repo.owner / STATE, record)
    except BaseException:
        stop(repo, server)
        raise
    return repo, server


def entry_model(models: list[str]) -> str:
    """The model a client talks to: the ensemble where there is one, else the (first) model."""
    return "ensemble" if "ensemble" in models else models[0]


def start_frontend(server: TritonServer, model: str, port: int) -> Any:
    """The OpenAI-compatible endpoint on 127.0.0.1:`port` for `model` (talking to it over gRPC), described by its
    metadata (the inputs /generate would have built), its config and its repository (the layout, where the
    tokenizer that renders chat lives)."""
    from specdeploy.serve.openai_chat import tokenizer_of
    from specdeploy.serve.openai_frontend import Frontend, Input, Served

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
    served = Served(server.grpc_url, model, inputs, bool(config.get("model_transaction_policy", {}).get("decoupled")),
                    layout, tokenizer_of(server.repo, layout, model, config_of))
    try:
        return Frontend(served, "127.0.0.1", port).start()
    except OSError as exc:
        raise UsageError(f"the OpenAI endpoint cannot listen on 127.0.0.1:{port}: {exc.strerror}",
                         hint="pick another --openai-port (0: any free port)") from None


def stop(repo: Repository, server: TritonServer | None) -> None:
    """Stop the server (and its OpenAI endpoint), drop its record, release the folder."""
    if server is not None:
        if server.frontend is not None:
            server.frontend.stop()
        server.stop()
    (repo.owner / STATE).unlink(missing_ok=True)
    if repo.claim is not None:
        os.close(repo.claim)


def _claim(owner: Path) -> int:
    """Hold `.specdeploy/serve.lock` for this `serve`'s life (the OS drops it when the process dies, however):
    a second `serve` of the same folder is told where the first one serves."""
    try:
        (owner / STATE).parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(owner / STATE.with_name("serve.lock"), os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise UsageError(f"cannot write under {owner}: {exc.strerror}", hint="`serve` records its endpoint and "
                         "log in ARTIFACT_DIR/.specdeploy/: serve a writable copy") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        running = _recorded(owner)
        where = (f"tritonserver pid {running['pid']}, grpc {running['grpc']}, http {running.get('http')}"
                 if running else "still loading its models")
        raise UsageError(f"{owner} is already served by another `specdeploy serve` ({where})",
                         hint="ask that one (`specdeploy ask PROMPT --artifact DIR`) or stop it first") from None
    _recorded(owner)  # nobody serves this folder: a record left behind is stale
    return fd


def _alive(pid: object) -> bool:
    """Whether `pid` is a running (not zombie) tritonserver."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z" and b"tritonserver" in cmdline


def _recorded(owner: Path) -> dict[str, object] | None:
    """The live endpoint recorded under `owner`; a stale or garbage record is removed (None)."""
    state = owner / STATE
    try:
        data = json.loads(state.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        data = None
    if isinstance(data, dict) and _alive(data.get("pid")) and isinstance(data.get("grpc"), str) and isinstance(
            data.get("models"), list) and data["models"]:
        return data
    try:
        state.unlink(missing_ok=True)
    except OSError:
        pass
    return None


def endpoint_of(path: Path) -> dict[str, object]:
    """What a live `serve` recorded for an artifact or repository folder."""
    for owner in (path, path.parent):
        if (owner / STATE).exists():
            state = _recorded(owner)
            if state is None:
                raise UsageError(f"{owner / STATE} is stale: the tritonserver it names is not running",
                                 hint="start it again with `specdeploy serve ARTIFACT_DIR` (the stale record "
                                      "was removed)")
            return state
    raise UsageError(f"no running `specdeploy serve` recorded under {path}",
                     hint="start one with `specdeploy serve ARTIFACT_DIR`, or pass --url HOST:PORT --model NAME")

