"""Self-check against the installed vLLM: would `vllm serve` accept what specdeploy emitted?

vLLM's own parser, `EngineArgs.create_engine_config()` and schedule expansion judge the emitted arguments, in a
subprocess of vLLM's environment (`_check_config.py`, run by path: argv in, one JSON line out), before anything
launches. A refusal comes back as vLLM's own words, located at the profile key that wrote the refused setting.
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specdeploy.engines.vllm import env
from specdeploy.engines.vllm.emit import Emitted, KeyPath
from specdeploy.errors import StepFailed, UsageError
from specdeploy.profile.issues import Issue

CHILD = Path(__file__).resolve().with_name("_check_config.py")
MARK = "specdeploy-vllm-check: "
"""Prefix of the child's answer line: vLLM logs on stdout too."""
TIMEOUT_S = 180
"""vLLM's import takes about 6 s on an idle 2-core CPU and the check under 1 s; a loaded box is much slower."""


@dataclass(frozen=True)
class SelfCheck:
    ok: bool
    version: str
    error: str | None
    """vLLM's own refusal, `Type: message`; None when accepted."""
    stage: str
    """Where it stopped or ended: import, arguments, engine config, schedule."""
    speculative: dict[str, Any] | None
    """The speculative config vLLM resolved (method, K, n-gram bounds, ...); None without speculation or on error."""
    import_s: float | None
    check_s: float | None
    wall_s: float


def check_args(argv: Sequence[str], *, timeout_s: float = TIMEOUT_S) -> SelfCheck:
    """vLLM's verdict on the arguments of `python -m vllm.entrypoints.openai.api_server` (e.g. `--config F`)."""
    install = env.require()
    started = time.perf_counter()
    try:
        proc = subprocess.run([str(install.python), str(CHILD), *argv], capture_output=True, text=True,
                              timeout=timeout_s, env=env.child_env({"HF_HUB_OFFLINE": "1"}), check=False)
    except subprocess.TimeoutExpired:
        raise StepFailed(f"vLLM {install.version} did not check the configuration within {timeout_s:.0f} s",
                         hint=env.HINT) from None
    answer = [line for line in proc.stdout.splitlines() if line.startswith(MARK)]
    if not answer:
        tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
        raise StepFailed(f"vLLM's configuration check gave no answer (exit {proc.returncode}): {tail}", hint=env.HINT)
    out = json.loads(answer[-1].removeprefix(MARK))
    return SelfCheck(ok=bool(out["ok"]), version=str(out.get("version", install.version)), error=out.get("error"),
                     stage=str(out["stage"]), speculative=out.get("speculative"), import_s=out.get("import_s"),
                     check_s=out.get("check_s"), wall_s=round(time.perf_counter() - started, 3))


def check_emitted(emitted: Emitted, *, timeout_s: float = TIMEOUT_S) -> SelfCheck:
    """vLLM's verdict on the `--config` file exactly as it would be written for `vllm serve`."""
    with tempfile.TemporaryDirectory(prefix="specdeploy-vllm-") as tmp:
        path = Path(tmp) / "vllm-serve.yaml"
        path.write_text(emitted.config_yaml())
        return check_args(["--config", str(path)], timeout_s=timeout_s)


def locate(error: str, emitted: Emitted) -> KeyPath:
    """The profile path behind the setting vLLM names in its error (the longest emitted key it mentions, as a
    field or an option); the speculative section when it names none."""
    mentioned = [key for key in emitted.origin if re.search(rf"(?<![\w-])(--)?{re.escape(key)}(?![\w-])", error)
                 or re.search(rf"(?<![\w-]){re.escape(key.replace('-', '_'))}(?![\w-])", error)]
    if not mentioned:
        return ("speculative",) if emitted.speculative is not None else ("serving",)
    return emitted.origin[max(mentioned, key=len)]


def require_accepted(result: SelfCheck, emitted: Emitted) -> None:
    """A refusal is the profile's fault (exit 2), located where the refused setting came from."""
    if result.ok:
        return
    error = str(result.error)
    path = locate(error, emitted)
    message = f"vLLM {result.version} refuses the emitted configuration ({result.stage}): {error}"
    raise UsageError(f"{'.'.join(path)}: {message}", issues=[Issue(path, message)])
