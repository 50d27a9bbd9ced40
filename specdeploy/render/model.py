"""The rendered repository's model: the typed context of each layout (templates never see the raw profile), the
manifest written beside it as `specdeploy-repo.json`, and what the build decided for it (`RenderInputs`). Value
types at the bottom: `render.context` builds them from a Resolved profile, `render.writer` renders them."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from specdeploy.resolve.resolved import Resolved


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
