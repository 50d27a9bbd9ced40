"""The typed template context of the profile's layout (`render.model`), built from a Resolved profile.

Every value a template prints is decided here; `manifest` is also written to the repository as
`specdeploy-repo.json` so `check-repo` knows the GPUs, the parallelism and the engine's max_draft_len.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from specdeploy.errors import UsageError
from specdeploy.plugin.registry import get_engine
from specdeploy.profile.rules import bad_model_name
from specdeploy.render.model import (
    EngineContext,
    LlmApiContext,
    ReferenceContext,
    RenderInputs,
    RepoContext,
    RepoManifest,
    TrtllmModel,
    VllmContext,
)
from specdeploy.resolve.resolved import Resolved

LAYOUTS = ("llmapi", "engine", "reference", "vllm")
MANIFEST = "specdeploy-repo.json"
VERSION = "1"
"""The one version folder render writes per model (`check-repo` and `serve` refuse any other)."""
ORCHESTRATOR = {"TRTLLM_ORCHESTRATOR": "1"}
"""Two tensorrtllm models in one server need orchestrator mode (tensorrtllm_backend model_instance_state.cc
:247-253 @ c2e65b8; `launch_triton_server.py --multi-model` sets it)."""


def layout_of(resolved: Resolved) -> str:
    """The profile's Triton layout; an engine served without Triton (vLLM's own server) has none to render."""
    layout = resolved.profile.triton.layout
    if layout != "auto":
        return str(layout)
    engine = get_engine(resolved.profile.runtime.backend)
    if not engine.layouts:
        raise UsageError(f"the {engine.name} engine has no Triton layout to render",
                         hint=f"`specdeploy build` writes what serves it (docs/engines/{engine.name}.md)")
    return engine.layouts[0]


def model_name(resolved: Resolved) -> str:
    """The served model's folder name; refused when it could escape the repository."""
    name = resolved.profile.triton.model_name
    if bad_model_name(name):
        raise UsageError(f"triton.model_name {name!r} is not a valid model folder name",
                         hint="use letters, digits, '_', '-' and '.' (no '/', no leading '.')")
    return name


def safe_value(what: str, value: str) -> str:
    """Paths and refs go into quoted literals: quotes and commas are fine, control characters are refused."""
    if any(ord(ch) < 0x20 for ch in value):
        raise UsageError(f"{what} {value!r} contains a newline or control character")
    return value


def _ref(ref: str) -> str:
    path = Path(ref).expanduser()
    return str(path.resolve()) if path.is_dir() else ref


def device_ids(instances: int, per_instance: int, first: int = 0) -> str:
    """`0,1;2,3`: `,` joins the GPUs of one instance, `;` separates instances."""
    return ";".join(",".join(str(first + i * per_instance + g) for g in range(per_instance))
                    for i in range(instances))


def _gpus(ids: str) -> set[int]:
    """Every GPU a `gpu_device_ids` string names."""
    return {int(g) for group in ids.split(";") for g in group.split(",") if g}


def shared_kv_fraction(fraction: float) -> float:
    """Each of two models on one GPU: half of min(fraction, 0.9). The fraction is of the memory free when that
    model allocates and Triton loads models in no fixed order, so equal halves summing to <= 0.9 is the split
    that holds either way (TensorRT-LLM examples/draft_target_model/README.md @ 11925f6 uses 0.5 each)."""
    return round(min(fraction, 0.9) / 2, 3)


def _manifest(resolved: Resolved, layout: str, engine_max: int | None,
              inputs: RenderInputs | None = None, server_env: dict[str, str] | None = None) -> RepoManifest:
    p = resolved.profile
    draft_len, schedule, _ = (inputs or RenderInputs()).plan(resolved)
    engine = get_engine(p.runtime.backend)
    release = {engine.version_field: engine.release(p)} if engine.version_field and resolved.line is not None else {}
    return RepoManifest(layout, resolved.loaded.name, p.hardware.count, p.hardware.tensor_parallel,
                        p.hardware.pipeline_parallel, p.speculative.mechanism, draft_len, engine_max, schedule,
                        server_env=server_env, trtllm_version=release.get("trtllm_version"),
                        vllm_version=release.get("vllm_version"))


def _decoupled(resolved: Resolved) -> bool:
    triton = resolved.profile.triton
    return bool(resolved.profile.serving.streaming if triton.decoupled is None else triton.decoupled)


def build_context(resolved: Resolved, inputs: RenderInputs | None = None, *,
                  llm_args: dict[str, Any] | None = None) -> RepoContext:
    """The typed context of the profile's layout; `llm_args` (the build's LLM() dict) is required for llmapi."""
    inputs = inputs or RenderInputs()
    layout = layout_of(resolved)
    if layout == "llmapi":
        if llm_args is None:
            raise UsageError("the llmapi layout needs the LLM API arguments of the build (llm_args)")
        return _llmapi(resolved, llm_args, inputs)
    if layout == "engine":
        return _engine(resolved, inputs)
    if layout == "vllm":
        return _vllm(resolved, inputs)
    return _reference(resolved, inputs)


def _vllm(resolved: Resolved, inputs: RenderInputs) -> VllmContext:
    p = resolved.profile
    if p.triton.decoupled is False:
        raise UsageError("triton.decoupled: Triton's vLLM backend needs a decoupled model (its model.py asserts it)",
                         hint="leave triton.decoupled unset for the vllm layout")
    draft_len, schedule, max_concurrency = inputs.plan(resolved)
    args = get_engine(p.runtime.backend).serving_args(resolved, draft_len=draft_len, schedule=schedule,
                                                      max_concurrency=max_concurrency)
    for key in ("model", "revision"):
        if isinstance(args.get(key), str):
            safe_value(f"model.json {key}", args[key])
    return VllmContext(model_name(resolved), args, p.triton.instances, _manifest(resolved, "vllm", None, inputs))


def _llmapi(resolved: Resolved, llm_args: dict[str, Any], inputs: RenderInputs) -> LlmApiContext:
    p = resolved.profile
    # `model` (the checkpoint below) is the one argument LLM() requires; the emitted options lack it because
    # trtllm-serve takes the model as its positional argument
    args = {k: v for k, v in llm_args.items() if k not in ("triton_config", "model")}
    world = p.hardware.tensor_parallel * p.hardware.pipeline_parallel
    instances = p.triton.instances
    ids = device_ids(instances, world) if instances > 1 else ""
    checkpoint = safe_value("target.model", inputs.model_dir or _ref(p.target.model))
    local = inputs.model_dir is not None or Path(checkpoint).is_dir()
    return LlmApiContext(model_name(resolved), args, _decoupled(resolved), 0, instances, ids,
                         _manifest(resolved, "llmapi", None, inputs), checkpoint,
                         None if local else p.target.revision,
                         notes=tuple(get_engine(p.runtime.backend).serving_notes(resolved, args)))


def _engine(resolved: Resolved, inputs: RenderInputs) -> EngineContext:
    p = resolved.profile
    world = p.hardware.tensor_parallel * p.hardware.pipeline_parallel
    params = get_engine(p.runtime.backend).triton_params(resolved)  # the mechanism's, as its plugin declares them
    engine_dir = safe_value("engine_dir", inputs.engine_dir or "/engines/target")
    kv = p.serving.kv_cache_free_gpu_memory_fraction
    target_ids = device_ids(p.triton.instances, world)
    draft_ids = device_ids(1, 1)
    if params.get("draft_engine") and _gpus(target_ids) & _gpus(draft_ids):
        kv = shared_kv_fraction(kv)
    target = TrtllmModel("tensorrt_llm", engine_dir, target_ids, p.triton.instances, kv, **params.get("target", {}))
    draft = None
    decoupled = _decoupled(resolved)
    if params.get("draft_engine"):
        if decoupled:
            raise UsageError("draft/target on the engine layout runs through the BLS, which cannot stream",
                             hint="set serving.streaming: false (and triton.decoupled: false)")
        draft = TrtllmModel("tensorrt_llm_draft", safe_value("draft_engine_dir", inputs.draft_engine_dir or
                                                             "/engines/draft"), draft_ids, 1, kv)
    engine_max = inputs.engine_max_draft_len if inputs.engine_max_draft_len is not None else params.get(
        "engine_max_draft_len", resolved.draft_len)  # what trtllm-build gives the engine (ReDrafter: beams x K)
    first_k = inputs.first_draft_len(resolved)
    return EngineContext(
        target, draft, p.serving.max_batch_size, decoupled,
        safe_value("tokenizer_dir", inputs.tokenizer_dir or _ref(p.target.model)),
        first_k if draft else 0, _manifest(resolved, "engine", engine_max, inputs, ORCHESTRATOR if draft else None),
        safe_value("site_packages", inputs.site_packages or ""),
        batch_scheduler_policy="guaranteed_no_evict", max_queue_size=0, bls_instances=p.serving.max_batch_size,
    )


def _reference(resolved: Resolved, inputs: RenderInputs) -> ReferenceContext:
    p = resolved.profile
    spec = p.speculative
    site = inputs.site_packages or ""  # the serving host's ($SPECDEPLOY_SITE_PACKAGES): never this machine's
    _, schedule, max_concurrency = inputs.plan(resolved)
    first_k = inputs.first_draft_len(resolved)
    return ReferenceContext(
        model_name(resolved), safe_value("site_packages", site), safe_value("target.model", _ref(p.target.model)),
        safe_value("draft_model", _ref(spec.draft_model) if spec.draft_model else ""), spec.mechanism,
        first_k, json.dumps({str(k): v for k, v in schedule.items()}) if schedule else "", max_concurrency or 0,
        p.tune.output_len, p.triton.instances, _decoupled(resolved), _manifest(resolved, "reference", None, inputs),
        max_seq_len=p.serving.max_seq_len, max_batch_size=p.serving.max_batch_size,
    )
