"""Start a real tritonserver (the 2.51 build nvidia-pytriton bundles) on 127.0.0.1, per triton.md §8.

The python backend stub embeds the *system* libpython and ignores venvs, so the backend folder gets the
stub for that Python and `numpy<2` installed into it; LD_LIBRARY_PATH must hold nvidia_pytriton.libs or
`load_model` hangs. Used by the triton test tier and, later, `specdeploy serve`.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from specdeploy.errors import MissingDependency, StepFailed
from specdeploy.runtime_paths import pytriton_root


def _bundle() -> Path:
    root = pytriton_root()
    if root is None or not (root / "tritonserver" / "bin" / "tritonserver").is_file():
        raise MissingDependency("no bundled tritonserver found", hint="pip install 'specdeploy[triton]'")
    return root


def system_python_version() -> str:
    """The X.Y of the libpython the stub links: the OS's shared libpython3.X (Debian 12: 3.11), else ours."""
    found = sorted(Path("/usr/lib").glob("*/libpython3.*.so.1.0")) + sorted(
        Path("/usr/lib").glob("libpython3.*.so.1.0")
    )
    if found:
        return found[-1].name.removeprefix("libpython").removesuffix(".so.1.0")
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def prepare_backends(folder: Path, *, python_version: str | None = None, extra: dict[str, Path] | None = None) -> Path:
    """`folder/python/{libtriton_python.so, triton_python_backend_utils.py, stub, numpy<2}` (+ `extra` python
    backends as `folder/<name>/model.py`); reused when already complete (numpy install is the slow part)."""
    root = _bundle()
    version = python_version or system_python_version()
    python = folder / "python"
    python.mkdir(parents=True, exist_ok=True)
    source = root / "tritonserver" / "backends" / "python"
    for name in ("libtriton_python.so", "triton_python_backend_utils.py"):
        shutil.copy2(source / name, python / name)
    stub = root / "tritonserver" / "python_backend_stubs" / version / "triton_python_backend_stub"
    if not stub.is_file():
        raise MissingDependency(f"nvidia-pytriton has no python backend stub for Python {version}")
    shutil.copy2(stub, python / stub.name)
    (python / stub.name).chmod(0o755)
    if not (python / "numpy").is_dir():
        from specdeploy.execute.process import child_env, run_process

        argv = [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--target",
            str(python),
            "--python-version",
            version,
            "--only-binary=:all:",
            "numpy<2",
        ]
        run_process(
            argv, log_path=folder / "pip.log", env=child_env(), cwd=folder, timeout=600, step_id="backends.numpy"
        )
    for name, model_py in (extra or {}).items():
        (folder / name).mkdir(exist_ok=True)
        shutil.copy2(model_py, folder / name / "model.py")
    return folder


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
    _log: object = field(default=None, repr=False)

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
            if self.process.poll() is not None:
                raise StepFailed(f"tritonserver exited ({self.process.returncode}):\n{self.log()[-3000:]}")
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

    def stop(self, timeout: float = 10.0) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout)
        if self._log is not None:
            self._log.close()  # type: ignore[attr-defined]

    def __enter__(self) -> TritonServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_server(
    repo: Path, backends: Path, log_path: Path, *, extra_args: tuple[str, ...] = (), timeout: float = 60.0,
    env: dict[str, str] | None = None,
) -> TritonServer:
    """tritonserver on 127.0.0.1 (free ports), explicit model control, nothing loaded yet; waits until live.
    `env` adds to the server's environment, which backends and python stubs inherit (e.g. TRTLLM_ORCHESTRATOR;
    a stub's embedded Python ignores PYTHONPATH)."""
    root = _bundle()
    binary = root / "tritonserver" / "bin" / "tritonserver"
    http, grpc = free_port(), free_port()
    argv = [
        str(binary),
        f"--model-repository={repo}",
        f"--backend-directory={backends}",
        "--model-control-mode=explicit",
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
    libs = root.parent / "nvidia_pytriton.libs"
    env = {
        **os.environ,
        **(env or {}),
        "LD_LIBRARY_PATH": os.pathsep.join(p for p in (str(libs), os.environ.get("LD_LIBRARY_PATH", "")) if p),
    }
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log = log_path.open("wb")
    process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    server = TritonServer(process, http, grpc, log_path, repo, log)
    try:
        server.wait_live(timeout)
    except BaseException:
        server.stop()
        raise
    return server
