"""The action table: `Step.action` name -> "module:function", imported only when a step runs.

An action is `def action(ctx: ActionContext) -> dict` (JSON-able outputs, stored in the step's stamp
and given to dependents through `ctx.outputs`). Other packages add theirs here, one line each.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

from specdeploy.errors import StepFailed

ACTIONS: dict[str, str] = {
    "fetch": "specdeploy.execute.fetch:fetch",
    "emit_llm_api": "specdeploy.trtllm.actions:emit_llm_api",
    "emit_reference": "specdeploy.trtllm.actions:emit_reference",
    "emit_engine": "specdeploy.trtllm.actions:emit_engine",
    "render_triton": "specdeploy.render.actions:render_triton",
    "check_triton": "specdeploy.render.actions:check_triton",
    "tune": "specdeploy.tune.actions:tune",
}

Action = Callable[[Any], dict[str, Any]]


def _target(name: str) -> tuple[str, str]:
    if name not in ACTIONS:
        raise StepFailed(f"unknown step action '{name}'", hint=f"known actions: {', '.join(sorted(ACTIONS))}")
    module, _, function = ACTIONS[name].partition(":")
    return module, function


def load_action(name: str) -> Action:
    """Import the action's module now; a missing module fails the step, naming what is missing."""
    module_name, function = _target(name)
    try:
        found = importlib.util.find_spec(module_name)
    except ModuleNotFoundError:
        found = None
    if found is None:
        raise StepFailed(f"action '{name}' lives in {module_name}, which is not part of this specdeploy installation",
                         hint="that stage is not implemented yet, or specdeploy is installed incompletely")
    module = importlib.import_module(module_name)
    func = getattr(module, function, None)
    if not callable(func):
        raise StepFailed(f"action '{name}': {module_name} has no function {function}()")
    return func  # type: ignore[no-any-return]


def code_hash(name: str | None) -> str:
    """Hash of the code that produces a step: every .py/.json of the action module's package folder.

    Argv steps (engines) are produced by the TRT-LLM emitter, so they hash `specdeploy.trtllm`.
    Returns "missing:<module>" when the module is absent (the step will fail clearly when run).
    """
    module_name = _target(name)[0] if name else "specdeploy.trtllm.engine"
    try:
        spec = importlib.util.find_spec(module_name)
    except ModuleNotFoundError:
        spec = None
    if spec is None or spec.origin is None:
        return f"missing:{module_name}"
    folder = Path(spec.origin).parent
    digest = hashlib.sha256()
    for path in sorted([*folder.glob("*.py"), *folder.glob("tables/*.json"), *folder.glob("templates/**/*")]):
        if path.is_file():
            digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()
