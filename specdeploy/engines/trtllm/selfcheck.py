"""Self-check against an installed TensorRT-LLM: its version, and its own `TorchLlmArgs` on the emitted options.

Always in a subprocess (importing tensorrt_llm initialises CUDA and MPI; specdeploy never imports it). The
child reads the emitted YAML the way `trtllm-serve --extra_llm_api_options` does: `yaml.safe_load`, merged
by `update_llm_args_with_extra_dict` where the release has it, then `TorchLlmArgs(**args)`.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from dataclasses import dataclass
from typing import Any

from specdeploy.errors import StepFailed, UsageError
from specdeploy.execute.process import NoAnswer, ask

TIMEOUT_S = 300
MARK = "specdeploy-selfcheck: "
"""Prefix of the child's answer line: `import tensorrt_llm` prints a banner on stdout (and libraries log there)."""
_HINT = "check the TensorRT-LLM installation (python -c 'import tensorrt_llm')"
_CHILD = r"""
import json, sys
req = json.load(sys.stdin)
import tensorrt_llm
out = {"version": str(getattr(tensorrt_llm, "__version__", ""))}
if req.get("options_yaml") is not None:
    import yaml
    from tensorrt_llm.llmapi import llm_args as A
    args = {"model": req["model"]}
    merge = getattr(A, "update_llm_args_with_extra_dict", None)
    extra = yaml.safe_load(req["options_yaml"]) or {}
    args = merge(args, extra) if merge is not None else {**args, **extra}
    if "skip_tokenizer_init" in getattr(A.TorchLlmArgs, "model_fields", {}):
        args.setdefault("skip_tokenizer_init", True)  # no tokenizer download: only the arguments are checked
    try:
        A.TorchLlmArgs(**args)
        out["ok"] = True
    except Exception as exc:
        out["ok"] = False
        out["error"] = type(exc).__name__ + ": " + str(exc)
print("\n" + req["mark"] + json.dumps(out))
"""


@dataclass(frozen=True)
class Installed:
    version: str
    error: str | None = None
    """What the installed TorchLlmArgs said about the options (None: accepted, or not asked)."""


def _run(request: dict[str, Any]) -> dict[str, Any] | None:
    if importlib.util.find_spec("tensorrt_llm") is None:
        return None
    try:
        proc = ask(
            [sys.executable, "-c", _CHILD],
            stdin=json.dumps({**request, "mark": MARK}),
            timeout=TIMEOUT_S,
            env=dict(os.environ),
        )
    except NoAnswer as exc:
        raise StepFailed(f"the installed tensorrt_llm: {exc} (import or argument check)", hint=_HINT) from None
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise StepFailed(f"importing the installed tensorrt_llm failed: {' | '.join(tail)}", hint=_HINT)
    answer = [line for line in proc.stdout.splitlines() if line.startswith(MARK)]
    if not answer:
        raise StepFailed(f"the installed tensorrt_llm check gave no answer: {proc.stdout.strip()[-300:]!r}", hint=_HINT)
    return json.loads(answer[-1].removeprefix(MARK))  # type: ignore[no-any-return]


def installed() -> Installed | None:
    """The installed TensorRT-LLM's `__version__` (None when it is not importable here)."""
    out = _run({})
    return Installed(out["version"]) if out else None


def installed_release() -> Installed | None:
    """The installed release: its package metadata (what `doctor` shows; no import, so a host without a GPU
    driver answers too), else its `__version__` in a subprocess; None when not installed."""
    from importlib.metadata import PackageNotFoundError, version

    for name in ("tensorrt_llm", "tensorrt-llm"):
        try:
            return Installed(version(name))
        except PackageNotFoundError:
            continue
    return installed()


def validate_options(options_yaml: str, model: str) -> Installed | None:
    """The installed `TorchLlmArgs` on an emitted `extra_llm_api_options` file (None when not installed)."""
    out = _run({"options_yaml": options_yaml, "model": model})
    return Installed(out["version"], None if out.get("ok") else out.get("error")) if out else None


def require_pinned(pinned: str, found: Installed | None) -> None:
    """A profile pinned to another release than the installed one is refused (exit 2): its options follow
    the pinned release's contract, which the installed one may refuse."""
    if found is None or found.version == pinned:
        return
    from specdeploy.engines.trtllm.versions import version_line

    try:
        covered = f" (contract range {version_line(found.version).range})"
    except ValueError:
        covered = " (no specdeploy contract covers it)"
    raise UsageError(
        f"the profile pins TensorRT-LLM {pinned}, but {found.version} is installed{covered}",
        hint=f"set runtime.trtllm_version: {found.version} (or --set runtime.trtllm_version="
        f"{found.version}), or install {pinned}: pip install tensorrt_llm=={pinned} "
        "--extra-index-url https://pypi.nvidia.com",
    )


def trtllm_report(metadata_version: str | None) -> dict[str, str]:
    """doctor's TensorRT-LLM lines: the installed version (metadata, else imported in a subprocess) and its
    contract range; `trtllm_contract` is "-" exactly when there is no usable installation."""
    from specdeploy.engines.trtllm.versions import version_line

    try:
        found = installed_release() if metadata_version is None else Installed(metadata_version)
    except StepFailed as exc:
        return {"tensorrt_llm": f"broken: {exc.message}", "trtllm_contract": "-"}
    if found is None:
        return {
            "tensorrt_llm": "not installed (pip install 'specdeploy[trtllm]' --extra-index-url "
            "https://pypi.nvidia.com)",
            "trtllm_contract": "-",
        }
    try:
        line = version_line(found.version)
        covered = f"{line.range}" + (f" (UNKNOWN: {', '.join(line.unknown)})" if line.unknown else "")
    except ValueError:
        covered = "none: specdeploy has no contract for this release"
    return {"tensorrt_llm": found.version, "trtllm_contract": covered}
