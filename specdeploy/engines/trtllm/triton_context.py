"""The typed contexts of TensorRT-LLM's Triton layouts (triton_layouts.py builds them): `llmapi`, the
`tensorrt_llm` python model around LLM() with its model.yaml; `engine`, the inflight_batcher_llm models around
TensorRT engines. What the templates under templates/triton/llmapi and templates/triton/engine print as `c`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from specdeploy.render.model import RepoManifest


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
        triton = {
            "max_batch_size": self.max_batch_size,
            "decoupled": self.decoupled,
            "cancellation_check_period_ms": self.cancellation_check_period_ms,
        }
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
