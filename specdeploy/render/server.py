"""Start a real tritonserver (the 2.51 build nvidia-pytriton bundles) on 127.0.0.1, per docs/design/triton.md §8.

LD_LIBRARY_PATH must hold nvidia_pytriton.libs or `load_model` hangs. tritonserver runs in a session of its
own (a terminal's Ctrl-C reaches only `serve`, which stops it in order) and gets a parent-death signal, so
a `serve` killed outright (SIGKILL, OOM) never leaves it serving. Used by the triton test tier and `serve`.
"""

from __future__ import annotations

import secrets
import socket
import subprocess
import sysconfig
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specdeploy.errors import MissingDependency, StepFailed
from specdeploy.execute.process import exited, spawn_group, stop_group
from specdeploy.render.backends import bundle, stub_env

SITE_PACKAGES_ENV = "SPECDEPLOY_SITE_PACKAGES"
"""Where a reference model's stub finds specdeploy when its config names no site_packages: ours."""
STOP_GRACE_S = 10.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class TritonServer:
    """A running tritonserver; `stop()` ends it by PID (its own process group)."""

    process: subprocess.Popen[bytes]
    http_port: int
    grpc_port: int
    log_path: Path
    repo: Path
    frontend: Any = None  # the OpenAI-compatible endpoint `serve` runs beside it

    @property
    def grpc_url(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.is_file() else ""

    def client(self):  # type: ignore[no-untyped-def]
        import tritonclient.grpc as grpcclient

        return grpcclient.InferenceServerClient(self.grpc_url)

    def wait_live(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        client = self.client()
        while time.monotonic() < deadline:
            if (code := exited(self.process)) is not None:
                raise StepFailed(f"tritonserver exited ({code}):\n{self.log()[-3000:]}")
            try:
                if client.is_server_live(client_timeout=2):
                    return
            except Exception:  # noqa: BLE001 - not up yet
                pass
            time.sleep(0.2)
        raise StepFailed(f"tritonserver not live after {timeout:.0f} s:\n{self.log()[-3000:]}")

    def load(self, model: str, timeout: float = 120.0) -> None:
        """Load one model (explicit model control); raises with the server's reason, always bounded."""
        self.client().load_model(model, client_timeout=timeout)

    def stop(self) -> None:
        stop_group(self.process, STOP_GRACE_S)

    def __enter__(self) -> TritonServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_server(
    repo: Path,
    backends: Path,
    log_path: Path,
    *,
    extra_args: tuple[str, ...] = (),
    timeout: float = 60.0,
    env: dict[str, str] | None = None,
    sealed: bool = False,
) -> TritonServer:
    """tritonserver on 127.0.0.1 (free ports), waits until live. By default explicit model control, nothing loaded
    yet (the test tier loads what it tests). `sealed` (what `serve` runs): every model of `repo` loaded at start
    and no request can load, unload or replace one afterwards (`SEALED`). The environment is `stub_env(env)`
    (`env`: e.g. TRTLLM_ORCHESTRATOR; a stub's embedded Python ignores PYTHONPATH)."""
    root = bundle()
    binary = root / "tritonserver" / "bin" / "tritonserver"
    http, grpc = free_port(), free_port()
    env = {SITE_PACKAGES_ENV: sysconfig.get_paths()["purelib"], **(env or {})}  # a reference model's specdeploy
    argv = [
        str(binary),
        f"--model-repository={repo}",
        f"--backend-directory={backends}",
        *(sealed_args() if sealed else ["--model-control-mode=explicit"]),
        "--http-address=127.0.0.1",
        f"--http-port={http}",
        "--grpc-address=127.0.0.1",
        f"--grpc-port={grpc}",
        "--allow-metrics=false",
        "--exit-on-error=false",
        "--strict-readiness=false",
        "--backend-config=python,stub-timeout-seconds=30",
        "--exit-timeout-secs=5",
        *extra_args,
    ]
    try:
        process = spawn_group(argv, env=stub_env(env), log_path=log_path, fresh_log=True)
    except OSError as exc:  # not executable, not a binary for this machine
        raise MissingDependency(
            f"cannot run the bundled tritonserver {binary}: {exc.strerror or exc}",
            hint="reinstall it: pip install --force-reinstall nvidia-pytriton==0.7.0",
        ) from None
    server = TritonServer(process, http, grpc, log_path, repo)
    try:
        server.wait_live(timeout)
    except BaseException:
        server.stop()
        raise
    return server


SEALED = ("model-repository", "shared-memory", "trace", "logging")
"""The API groups a sealed server restricts. Model control mode NONE loads the repository at start and refuses
every load and unload request, file overrides included (server docs/user_guide/model_management.md @ v2.51.0,
"Model Control Mode NONE"; core src/model_repository_manager/model_repository_manager.cc @ r24.10,
`LoadUnloadModel`). On top, these groups answer only requests carrying a header whose value is a random key
nobody is told (`--http-restricted-api` / `--grpc-restricted-protocol`, server
docs/customization_guide/inference_protocols.md @ v2.51.0, "Limit Endpoint Access (BETA)"): the load request
is refused before its payload is read, and no client can register shared memory (a region the server would
write outputs into) or change tracing and logging. Health, metadata, model-config, inference and statistics
stay open."""


def sealed_args() -> list[str]:
    key = secrets.token_hex(16)  # in the process table, but the control mode alone refuses loads
    group = f"{','.join(SEALED)}:specdeploy-sealed={key}"
    return ["--model-control-mode=none", f"--http-restricted-api={group}", f"--grpc-restricted-protocol={group}"]
