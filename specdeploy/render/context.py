"""Typed template contexts, one per layout, built from a Resolved profile (templates never see the raw profile).

Every value a template prints is decided here; `manifest` is also written to the repository as
`specdeploy-repo.json` so `check-repo` knows the GPUs, the parallelism and the engine's max_draft_len.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from specdeploy.errors import UsageError
from specdeploy.plugin.registry import get_engine
from specdeploy.profile.rules import bad_model_name
from specdeploy.resolve.resolver import Resolved

LAYOUTS = ("llmapi", "engine", "reference", "vllm")
MANIFEST = "specdeploy-repo.json"
VERSION = "1"
"""The one version folder render writes per model (`check-repo` and `serve` refuse any other)."""
ORCHESTRATOR = {"TRTLLM_ORCHESTRATOR": "1"}
"""Two tensorrtllm models in one server need orchestrator mode (tensorrtllm_backend model_instance_state.cc
:247-253 @ c2e65b8; `launch_triton_server.py --multi-model` sets it)."""


@dataclass(frozen=True)
class RepoManifest:
    """Deployment facts the checks need and a config.pbtxt cannot carry."""

    layout: str
    profile: str
    gpus: int
    tensor_parallel: int
    pipeline_parallel: int
    mechanism: str
    draft_len: int
    engine_max_draft_len: int | None = None
    schedule: dict[int, int] | None = None
    models: tuple[str, ...] = ()  # the model folders rendered: `serve` loads these and nothing else
    server_env: dict[str, str] | None = None
    """Environment tritonserver needs (`TRTLLM_ORCHESTRATOR=1` for two tensorrtllm models in one repository)."""
    trtllm_version: str | None = None
    """The TensorRT-LLM release the repository was rendered for (`check-repo` checks model.yaml against it)."""
    vllm_version: str | None = None
    """The vLLM release a `vllm` layout was rendered for (`check-repo` checks model.json against it); written only
    when set, so the other layouts' manifests keep their keys."""

    def to_json(self) -> str:
        data = asdict(self)
        if data["vllm_version"] is None:
            del data["vllm_version"]
        return json.dumps(data, indent=2, sort_keys=True, allow_nan=False) + "\n"


@dataclass(frozen=True)
class LlmApiContext:
    """`tensorrt_llm` python model + model.yaml; `llm_args` is the build's LLM() dict (no triton_config)."""

    model_name: str
    llm_args: dict[str, Any]
    decoupled: bool
    max_batch_size: int
    instances: int
    gpu_device_ids: str
    manifest: RepoManifest
    checkpoint: str = ""
    """LLM()'s required `model`: the fetched folder, or the hub id (pinned by `revision`) or a local folder."""
    revision: str | None = None
    layout: str = "llmapi"
    cancellation_check_period_ms: int = 100
    notes: tuple[str, ...] = ()
    """Comment lines above model.yaml's keys (the engine's `serving_notes`: what it will not do as they say)."""

    @property
    def folders(self) -> dict[str, str]:
        """Template folder -> model folder in the repository."""
        return {"tensorrt_llm": self.model_name}

    @property
    def model_yaml(self) -> dict[str, Any]:
        triton = {"max_batch_size": self.max_batch_size, "decoupled": self.decoupled,
                  "cancellation_check_period_ms": self.cancellation_check_period_ms}
        pinned = {"model": self.checkpoint, **({"revision": self.revision} if self.revision else {})}
        return {**pinned, **self.llm_args, "triton_config": triton}


@dataclass(frozen=True)
class TrtllmModel:
    """One C++-backend model (`tensorrt_llm` or `tensorrt_llm_draft`) and its engine."""

    name: str
    engine_dir: str
    gpu_device_ids: str
    instances: int
    kv_cache_free_gpu_mem_fraction: float = 0.9
    decoding_mode: str = ""
    medusa_choices: str = ""
    eagle_choices: str = ""
    lookahead: tuple[int, int, int] | None = None


@dataclass(frozen=True)
class EngineContext:
    """The inflight_batcher_llm layout (TRT-LLM <= 1.2.x engines)."""

    target: TrtllmModel
    draft: TrtllmModel | None
    max_batch_size: int
    decoupled: bool
    tokenizer_dir: str
    num_draft_tokens: int
    manifest: RepoManifest
    site_packages: str = ""
    triton_backend: str = "tensorrtllm"
    batching_strategy: str = "inflight_fused_batching"
    batch_scheduler_policy: str = "guaranteed_no_evict"
    enable_kv_cache_reuse: bool = True
    max_queue_delay_microseconds: int = 0
    max_queue_size: int = 0
    logits_datatype: str = "TYPE_FP32"
    pre_instances: int = 1
    post_instances: int = 1
    bls_instances: int = 1
    layout: str = "engine"

    @property
    def folders(self) -> dict[str, str]:
        names = ["ensemble", "preprocessing", "tensorrt_llm", "postprocessing", "tensorrt_llm_bls"]
        return {n: n for n in names + (["tensorrt_llm_draft"] if self.draft else [])}


@dataclass(frozen=True)
class ReferenceContext:
    """A python model around the CPU reference runtime (`specdeploy.engines.reference.runtime`: `load_pair`,
    `generate`)."""

    model_name: str
    site_packages: str
    target_ref: str
    drafter_ref: str
    mechanism: str  # the drafter's, also when the tune turned speculation off (a request may turn it on)
    draft_len: int  # 0: speculation off
    schedule_json: str
    max_concurrency: int
    default_max_tokens: int
    instances: int
    decoupled: bool  # serving.streaming / triton.decoupled: streamed answers, or unary ModelInfer and /generate
    manifest: RepoManifest
    device: str = "cpu"
    layout: str = "reference"
    max_seq_len: int = 0  # serving.max_seq_len: prompt + max_tokens must fit (0: the model's context)
    max_batch_size: int = 1  # serving.max_batch_size: requests decoding together in the model's loop

    @property
    def folders(self) -> dict[str, str]:
        return {"model": self.model_name}


@dataclass(frozen=True)
class VllmContext:
    """Triton's vLLM backend (python-based, `backend: "vllm"`): config.pbtxt and `1/model.json`, the keyword
    arguments of vLLM's AsyncEngineArgs (the engine's `serving_args`). The backend requires a decoupled model and
    batches itself (tables/triton-vllm-r24.10.json of the vLLM engine)."""

    model_name: str
    engine_args: dict[str, Any]
    instances: int
    manifest: RepoManifest
    layout: str = "vllm"

    @property
    def folders(self) -> dict[str, str]:
        return {"model": self.model_name}


RepoContext = LlmApiContext | EngineContext | ReferenceContext | VllmContext


@dataclass(frozen=True)
class RenderInputs:
    """What the profile does not say: paths decided by the build (engines, tokenizer, site-packages)."""

    engine_dir: str | None = None
    draft_engine_dir: str | None = None
    engine_max_draft_len: int | None = None
    tokenizer_dir: str | None = None
    model_dir: str | None = None
    """The target checkpoint folder the build fetched (llmapi `model.yaml` `model:`; None: the profile's)."""
    site_packages: str | None = None
    draft_len: int | None = None
    """The tuned maximum draft length (None: the profile's)."""
    schedule: dict[int, int] | None = None
    """The tuned lower-bound schedule `{concurrency_lo: K}` (None: the profile's)."""
    max_concurrency: int | None = None
    """The tuned concurrency above which speculation stops (None: the profile's)."""
    extra: dict[str, Any] = field(default_factory=dict)

    def plan(self, resolved: Resolved) -> tuple[int, dict[int, int] | None, int | None]:
        """(draft_len, schedule, max_concurrency): tuned values where the build tuned, else the profile's."""
        spec = resolved.profile.speculative
        schedule = self.schedule if self.schedule is not None else spec.schedule
        return (resolved.draft_len if self.draft_len is None else self.draft_len,
                dict(schedule) if schedule else None,
                spec.max_concurrency if self.max_concurrency is None else self.max_concurrency)

    def first_draft_len(self, resolved: Resolved) -> int:
        """K for one request at a time (what a batch-0 python model or the BLS default uses)."""
        draft_len, schedule, _ = self.plan(resolved)
        return schedule[min(schedule)] if schedule else draft_len


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
