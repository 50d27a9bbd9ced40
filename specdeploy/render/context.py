"""The profile's Triton layout and its typed template context, built by the layout (`TritonLayout.context`, in its
engine's package), and what every layout's builder shares: the model folder's name, safe literals, GPU ids, the
manifest (written to the repository as `specdeploy-repo.json` so `check-repo` knows the GPUs, the parallelism and
the engine's max_draft_len).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specdeploy.errors import UsageError
from specdeploy.plugin.layout import TritonLayout
from specdeploy.plugin.registry import get_engine, layout_named
from specdeploy.profile.rules import bad_model_name
from specdeploy.render.model import RenderInputs, RepoContext, RepoManifest
from specdeploy.resolve.resolved import Resolved

MANIFEST = "specdeploy-repo.json"
VERSION = "1"
"""The one version folder render writes per model (`check-repo` and `serve` refuse any other)."""


def layout_of(resolved: Resolved) -> str:
    """The profile's Triton layout; an engine served without Triton (vLLM's own server) has none to render."""
    layout = resolved.profile.triton.layout
    if layout != "auto":
        return str(layout)
    engine = get_engine(resolved.profile.runtime.backend)
    if not engine.layouts:
        raise UsageError(
            f"the {engine.name} engine has no Triton layout to render",
            hint=f"`specdeploy build` writes what serves it (docs/engines/{engine.name}.md)",
        )
    return engine.layouts[0]


def model_name(resolved: Resolved) -> str:
    """The served model's folder name; refused when it could escape the repository."""
    name = resolved.profile.triton.model_name
    if bad_model_name(name):
        raise UsageError(
            f"triton.model_name {name!r} is not a valid model folder name",
            hint="use letters, digits, '_', '-' and '.' (no '/', no leading '.')",
        )
    return name


def safe_value(what: str, value: str) -> str:
    """Paths and refs go into quoted literals: quotes and commas are fine, control characters are refused."""
    if any(ord(ch) < 0x20 for ch in value):
        raise UsageError(f"{what} {value!r} contains a newline or control character")
    return value


def local_ref(ref: str) -> str:
    """A model reference as the serving host finds it: an existing folder made absolute, else as it is."""
    path = Path(ref).expanduser()
    return str(path.resolve()) if path.is_dir() else ref


def manifest_of(
    resolved: Resolved,
    layout: str,
    engine_max: int | None,
    inputs: RenderInputs | None = None,
    server_env: dict[str, str] | None = None,
) -> RepoManifest:
    """The manifest of a repository of `layout` (the models it serves are filled in by the writer)."""
    p = resolved.profile
    draft_len, schedule, _ = (inputs or RenderInputs()).plan(resolved)
    engine = get_engine(p.runtime.backend)
    release = {engine.version_field: engine.release(p)} if engine.version_field and resolved.line is not None else {}
    return RepoManifest(
        layout,
        resolved.loaded.name,
        p.hardware.count,
        p.hardware.tensor_parallel,
        p.hardware.pipeline_parallel,
        p.speculative.mechanism,
        draft_len,
        engine_max,
        schedule,
        server_env=server_env,
        trtllm_version=release.get("trtllm_version"),
        vllm_version=release.get("vllm_version"),
    )


def decoupled(resolved: Resolved) -> bool:
    """triton.decoupled, else serving.streaming: the served model streams its answers."""
    triton = resolved.profile.triton
    return bool(resolved.profile.serving.streaming if triton.decoupled is None else triton.decoupled)


def build_context(
    resolved: Resolved, inputs: RenderInputs | None = None, *, llm_args: dict[str, Any] | None = None
) -> RepoContext:
    """The typed context of the profile's layout (its `TritonLayout.context`); `llm_args` (the build's LLM() dict)
    is required where the layout `needs_llm_args`."""
    layout = triton_layout(layout_of(resolved))
    if layout.needs_llm_args and llm_args is None:
        raise UsageError(f"the {layout.name} layout needs the LLM API arguments of the build (llm_args)")
    return layout.context(resolved, inputs or RenderInputs(), llm_args)


def triton_layout(name: str) -> TritonLayout:
    """The installed layout of that name (a profile names only those: `triton.layout` is checked at load)."""
    layout = layout_named(name)
    if layout is None:
        raise UsageError(f"no installed engine serves the Triton layout {name!r}")
    return layout
