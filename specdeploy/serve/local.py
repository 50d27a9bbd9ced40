"""`specdeploy serve`: a local tritonserver for a rendered repository, every model loaded, stopped cleanly.

The endpoint is recorded in `<artifact>/.specdeploy/serve.json` so `specdeploy ask` finds it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from specdeploy._io import write_json_atomic
from specdeploy.errors import StepFailed, UsageError
from specdeploy.render.context import MANIFEST
from specdeploy.render.server import TritonServer, prepare_backends, start_server, system_python_version

STATE = Path(".specdeploy") / "serve.json"


@dataclass(frozen=True)
class Repository:
    """A rendered repository: its folder, the folder that owns it (artifact or repo) and its models."""

    root: Path
    owner: Path
    layout: str
    models: tuple[str, ...]
    server_env: dict[str, str] | None = None


def find_repository(path: Path) -> Repository:
    """`path` is an artifact folder (holding `triton/`) or a repository itself."""
    root = path / "triton" if (path / "triton" / MANIFEST).is_file() else path
    if not (root / MANIFEST).is_file():
        raise UsageError(f"{path} holds no rendered Triton repository ({MANIFEST} not found)",
                         hint="run `specdeploy build PROFILE` or `specdeploy render PROFILE` first")
    manifest = json.loads((root / MANIFEST).read_text())
    layout = manifest.get("layout", "unknown")
    models = [p.name for p in sorted(root.iterdir()) if (p / "config.pbtxt").is_file()]
    # composing models first: an ensemble loads only once its steps are ready
    models.sort(key=lambda m: m == "ensemble")
    return Repository(root, path, layout, tuple(models), manifest.get("server_env"))


def backends_folder() -> Path:
    cache = Path(os.environ.get("SPECDEPLOY_CACHE") or Path.home() / ".cache" / "specdeploy")
    return cache / f"triton-backends-2.51-py{system_python_version()}"


def start(path: Path, *, report: Callable[[str], None] = lambda _: None, load_timeout: float = 300.0) -> tuple[
        Repository, TritonServer]:
    """Start tritonserver on 127.0.0.1, load every model, record the endpoint; the caller stops it."""
    repo = find_repository(path)
    if repo.layout == "engine":
        report("note: the engine layout needs the real tensorrtllm backend (NGC image with a GPU); "
               "this local server has only the python backend")
    report("preparing the python backend (first time: installs numpy<2 for the backend stub) ...")
    backends = prepare_backends(backends_folder())
    log_path = repo.owner / ".specdeploy" / "tritonserver.log"
    server = start_server(repo.root, backends, log_path, env=repo.server_env)
    try:
        for model in repo.models:
            report(f"loading {model} ...")
            try:
                server.load(model, timeout=load_timeout)
            except Exception as exc:  # noqa: BLE001 - the server's reason is in its log
                raise StepFailed(f"tritonserver could not load '{model}': {exc}",
                                 hint=f"server log: {log_path}\n{server.log()[-2000:]}") from None
        write_json_atomic(repo.owner / STATE, {"pid": server.process.pid, "grpc": server.grpc_url,
                                               "http": f"127.0.0.1:{server.http_port}", "layout": repo.layout,
                                               "models": list(repo.models), "log": str(log_path)})
    except BaseException:
        server.stop()
        raise
    return repo, server


def stop(repo: Repository, server: TritonServer) -> None:
    server.stop()
    (repo.owner / STATE).unlink(missing_ok=True)


def endpoint_of(path: Path) -> dict[str, object]:
    """What `serve` recorded for an artifact or repository folder."""
    for owner in (path, path.parent):
        state = owner / STATE
        if state.is_file():
            return dict(json.loads(state.read_text()))
    raise UsageError(f"no running `specdeploy serve` recorded under {path}",
                     hint="start one with `specdeploy serve ARTIFACT_DIR`, or pass --url HOST:PORT --model NAME")

