"""The action table: `Step.action` name -> "module:function", imported only when a step runs.

An action is `def action(ctx: ActionContext) -> dict` (JSON-able outputs, stored in the step's stamp
and given to dependents through `ctx.outputs`). The core's stages add theirs here, one line each; an engine
names its own (`Engine.actions`).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specdeploy.errors import StepFailed

if TYPE_CHECKING:
    from specdeploy.plan.model import Step
    from specdeploy.resolve.resolved import Resolved

ACTIONS: dict[str, str] = {
    "fetch": "specdeploy.execute.fetch:fetch",
    "render_triton": "specdeploy.render.actions:render_triton",
    "check_triton": "specdeploy.render.actions:check_triton",
    "render_deploy": "specdeploy.deploy.actions:render_deploy",
    "tune": "specdeploy.tune.actions:tune",
}

Action = Callable[[Any], dict[str, Any]]


def _table() -> dict[str, str]:
    """The core's actions and every installed engine's (`Engine.actions`: its emit and build steps)."""
    from specdeploy.plugin.registry import engines

    table = dict(ACTIONS)
    for engine in engines().values():
        table.update(engine.actions())
    return table


def _target(name: str) -> tuple[str, str]:
    table = ACTIONS if name in ACTIONS else _table()
    if name not in table:
        raise StepFailed(f"unknown step action '{name}'", hint=f"known actions: {', '.join(sorted(table))}")
    module, _, function = table[name].partition(":")
    return module, function


def load_action(name: str) -> Action:
    """Import the action's module now; a missing module fails the step, naming what is missing."""
    module_name, function = _target(name)
    try:
        found = importlib.util.find_spec(module_name)
    except ModuleNotFoundError:
        found = None
    if found is None:
        raise StepFailed(
            f"action '{name}' lives in {module_name}, which is not part of this specdeploy installation",
            hint="that stage is not implemented yet, or specdeploy is installed incompletely",
        )
    module = importlib.import_module(module_name)
    func = getattr(module, function, None)
    if not callable(func):
        raise StepFailed(f"action '{name}': {module_name} has no function {function}()")
    return func  # type: ignore[no-any-return]


CODE_INPUTS: dict[str, tuple[str, ...]] = {
    "tune": ("specdeploy.engines", "specdeploy.perfmodel"),
}
"""Packages beyond its own whose code shapes a step's output: the tuner measures through an engine
and predicts with the performance model, so a change there re-tunes."""


RUNTIME_INPUTS: dict[str, str] = {
    "tune": "specdeploy.tune.actions:runtime_inputs",
}
"""Actions whose output depends on this machine (the tune measures where it can, else predicts): a function
`(step, resolved) -> {name: value}` whose parts join the step's cache key, so a rebuild says e.g.
`measuring backend changed`."""


def runtime_inputs(step: Step, resolved: Resolved) -> dict[str, str]:
    target = RUNTIME_INPUTS.get(step.action or "")
    if target is None:
        return {}
    module, _, function = target.partition(":")
    return dict(getattr(importlib.import_module(module), function)(step, resolved))


def code_hash(name: str | None) -> str:
    """Hash of the code that produces a step: every .py (and tables/templates) of the action module's package,
    subpackages included, and of the packages in CODE_INPUTS.

    Argv steps (engines) are produced by the TRT-LLM emitter, so they hash `specdeploy.engines.trtllm`.
    Returns "missing:<module>" when the module is absent (the step will fail clearly when run).
    """
    module_name = _target(name)[0] if name else "specdeploy.engines.trtllm.engine"
    digest = hashlib.sha256()
    for package in (module_name, *CODE_INPUTS.get(name or "", ())):
        folder = _package_folder(package)
        if folder is None:
            return f"missing:{package}"
        for path in sorted(
            p
            for pattern in ("**/*.py", "**/tables/*.json", "templates/**/*")
            for p in folder.glob(pattern)
            if "__pycache__" not in p.parts
        ):
            if path.is_file():
                digest.update(
                    package.encode()
                    + b":"
                    + path.relative_to(folder).as_posix().encode()
                    + b"\0"
                    + path.read_bytes()
                    + b"\0"
                )
    return digest.hexdigest()


def _package_folder(module_name: str) -> Path | None:
    """The folder of a module's package (of the package itself when given one), or None when not installed."""
    try:
        spec = importlib.util.find_spec(module_name)
    except ModuleNotFoundError:
        spec = None
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent
