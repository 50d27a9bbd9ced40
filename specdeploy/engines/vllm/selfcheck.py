"""Self-check against the installed vLLM: would `vllm serve --config FILE` accept what specdeploy emitted?

vLLM's own argument parser, `EngineArgs.create_engine_config()` and schedule expansion judge the emitted files in
a subprocess of vLLM's environment (`_check_config.py`, run by path: files in, one JSON line out), before anything
launches. One subprocess checks many files: importing vLLM costs seconds (a minute on a loaded 2-core box), a
check well under one. A refusal comes back in vLLM's own words, located at the profile key that wrote it.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specdeploy.engines.vllm import env
from specdeploy.engines.vllm.contract import ReleaseLine
from specdeploy.engines.vllm.emit import FIELD_ORIGIN, Emitted, KeyPath
from specdeploy.errors import StepFailed, UsageError
from specdeploy.execute.process import NoAnswer, ask
from specdeploy.issues import Issue

CHILD = Path(__file__).resolve().with_name("_check_config.py")
MARK = "specdeploy-vllm-check: "
"""Prefix of the child's answer line: vLLM logs on stdout too."""
TIMEOUT_S = 600
"""vLLM's import takes about 6 s on an idle 2-core CPU, 30-50 s on a loaded one; a check of an architecture vLLM
has not inspected yet starts one more interpreter (its model registry), so a batch is given minutes."""


@dataclass(frozen=True)
class SelfCheck:
    ok: bool
    error: str | None
    """vLLM's own refusal (`Type: message`, pydantic's boilerplate removed); None when accepted."""
    stage: str
    """Where it stopped or ended: arguments, engine config, schedule."""
    speculative: dict[str, Any] | None
    """The speculative config vLLM resolved (method, K, n-gram bounds, ...); None without one or on error."""
    check_s: float


@dataclass(frozen=True)
class Batch:
    version: str
    results: list[SelfCheck]
    import_s: float
    wall_s: float


def _clean(error: str) -> str:
    lines = [
        re.sub(r"\s*\[type=.*$", "", line)
        for line in error.splitlines()
        if not line.strip().startswith("For further information")
    ]
    return re.sub(r"\s+", " ", " ".join(lines)).strip()


def check_files(config_files: Sequence[Path], *, timeout_s: float = TIMEOUT_S) -> Batch:
    """vLLM's verdict on each `vllm serve --config` file (or Triton's vLLM backend `model.json`), after one import
    of vLLM."""
    install = env.require()
    started = time.perf_counter()
    try:
        proc = ask(
            [str(install.python), str(CHILD), *map(str, config_files)],
            timeout=timeout_s,
            env=env.child_env({"HF_HUB_OFFLINE": "1"}),
        )
    except NoAnswer as exc:
        raise StepFailed(
            f"vLLM {install.version} checking {len(config_files)} configuration(s): {exc}", hint=env.HINT
        ) from None
    answer = [line for line in proc.stdout.splitlines() if line.startswith(MARK)]
    if not answer:
        tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
        raise StepFailed(f"vLLM's configuration check gave no answer (exit {proc.returncode}): {tail}", hint=env.HINT)
    out = json.loads(answer[-1].removeprefix(MARK))
    if not out["ok"]:
        raise StepFailed(f"importing vLLM {install.version} failed: {out.get('error')}", hint=env.HINT)
    results = [
        SelfCheck(
            ok=bool(r["ok"]),
            error=_clean(r["error"]) if r.get("error") else None,
            stage=r["stage"],
            speculative=r.get("speculative"),
            check_s=float(r["check_s"]),
        )
        for r in out["results"]
    ]
    return Batch(str(out["version"]), results, float(out["import_s"]), round(time.perf_counter() - started, 3))


def check_emitted(emitted: Sequence[Emitted], *, timeout_s: float = TIMEOUT_S) -> Batch:
    """vLLM's verdict on each `--config` file exactly as specdeploy writes it for `vllm serve`."""
    with tempfile.TemporaryDirectory(prefix="specdeploy-vllm-") as tmp:
        paths = []
        for i, one in enumerate(emitted):
            paths.append(Path(tmp) / f"vllm-serve-{i}.yaml")
            paths[-1].write_text(one.config_yaml())
        return check_files(paths, timeout_s=timeout_s)


def config_folder(source: Path, dest: Path) -> Path:
    """A copy of a model folder that vLLM can configure from, without weights: its config.json (less the GGUF
    quantization that transformers keeps after loading a GGUF, which vLLM refuses) and tokenizer files."""
    dest.mkdir(parents=True, exist_ok=True)
    config = json.loads((source / "config.json").read_text())
    if config.get("quantization_config", {}).get("quant_method") == "gguf":
        del config["quantization_config"]
    (dest / "config.json").write_text(json.dumps(config, indent=1))
    for name in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        if (source / name).is_file():
            shutil.copy(source / name, dest / name)
    return dest


def locate(error: str, emitted: Emitted, line: ReleaseLine) -> KeyPath:
    """The profile path behind the setting vLLM's refusal is about: a known phrase of the release's messages,
    else the first emitted setting it names (`--flag`, or a field by name: pydantic puts a refused field on a
    line of its own); the section when it names none."""
    for phrase, key in line.error_phrases.items():
        path = emitted.origin.get(key) or FIELD_ORIGIN.get(key)
        if phrase in error and path:
            return path
    flags = {flag.lstrip("-").replace("-", "_"): flag for flag in emitted.origin if flag.startswith("--")}
    for match in re.finditer(r"(?:--)?[A-Za-z][\w-]*", error):
        word = match.group(0)
        name = word.lstrip("-").replace("-", "_")
        if word in emitted.origin or (not word.startswith("--") and name in emitted.origin):
            return emitted.origin[word if word in emitted.origin else name]
        if name in flags:
            return emitted.origin[flags[name]]
    return ("speculative",) if emitted.speculative is not None else ("serving",)


def require_accepted(result: SelfCheck, version: str, emitted: Emitted, line: ReleaseLine) -> None:
    """A refusal is the profile's fault (exit 2), located where the refused setting came from."""
    if result.ok:
        return
    path = locate(str(result.error), emitted, line)
    message = f"vLLM {version} refuses the emitted configuration ({result.stage}): {result.error}"
    hint = next((hint for phrase, hint in line.error_hints.items() if phrase in str(result.error)), None)
    raise UsageError(f"{'.'.join(path)}: {message}", hint=hint, issues=[Issue(path, message, hint)])
