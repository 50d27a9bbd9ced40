"""TensorRT-LLM's Triton layouts: `llmapi` (the PyTorch engine: Triton's `tensorrt_llm` python model around
LLM(), configured by model.yaml) and `engine` (TensorRT engines behind the C++ tensorrtllm backend, with the
inflight_batcher_llm pre/post-processing, ensemble and BLS models). Templates: templates/triton/llmapi and
templates/triton/engine; their checks for `check-repo`: checks_llmapi.py, checks_engine.py.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from specdeploy.boundedio import read_yaml
from specdeploy.engines.trtllm.checks_engine import check_decoupled, check_draft_tokens, check_engine_upstream
from specdeploy.engines.trtllm.checks_llmapi import check_llmapi, check_llmapi_upstream
from specdeploy.engines.trtllm.triton_context import EngineContext, LlmApiContext, TrtllmModel
from specdeploy.errors import UsageError
from specdeploy.plugin.layout import TritonLayout, string_parameter
from specdeploy.plugin.registry import get_engine
from specdeploy.render.check_pbtxt import Model, RepoIssue
from specdeploy.render.context import decoupled, local_ref, manifest_of, model_name, safe_value
from specdeploy.render.model import RenderInputs
from specdeploy.resolve.resolved import Resolved

ORCHESTRATOR = {"TRTLLM_ORCHESTRATOR": "1"}
"""Two tensorrtllm models in one server need orchestrator mode (tensorrtllm_backend model_instance_state.cc
:247-253 @ c2e65b8; `launch_triton_server.py --multi-model` sets it)."""


def device_ids(instances: int, per_instance: int, first: int = 0) -> str:
    """`0,1;2,3`: `,` joins the GPUs of one instance, `;` separates instances."""
    return ";".join(",".join(str(first + i * per_instance + g) for g in range(per_instance)) for i in range(instances))


def _gpus(ids: str) -> set[int]:
    """Every GPU a `gpu_device_ids` string names."""
    return {int(g) for group in ids.split(";") for g in group.split(",") if g}


def shared_kv_fraction(fraction: float) -> float:
    """Each of two models on one GPU: half of min(fraction, 0.9). The fraction is of the memory free when that
    model allocates and Triton loads models in no fixed order, so equal halves summing to <= 0.9 is the split
    that holds either way (TensorRT-LLM examples/draft_target_model/README.md @ 11925f6 uses 0.5 each)."""
    return round(min(fraction, 0.9) / 2, 3)


class LlmApi(TritonLayout):
    """The PyTorch engine's layout: model.yaml is the build's LLM() arguments, the checkpoint pinned."""

    name = "llmapi"
    needs_llm_args = True
    portable = True  # model.yaml names the checkpoint as `${HF_HUB_CACHE}/...` or a hub id (render.actions)
    templated_chat = True

    def context(self, resolved: Resolved, inputs: RenderInputs, llm_args: dict[str, Any] | None) -> LlmApiContext:
        p = resolved.profile
        # `model` (the checkpoint below) is the one argument LLM() requires; the emitted options lack it because
        # trtllm-serve takes the model as its positional argument
        args = {k: v for k, v in (llm_args or {}).items() if k not in ("triton_config", "model")}
        world = p.hardware.tensor_parallel * p.hardware.pipeline_parallel
        instances = p.triton.instances
        ids = device_ids(instances, world) if instances > 1 else ""
        checkpoint = safe_value("target.model", inputs.model_dir or local_ref(p.target.model))
        local = inputs.model_dir is not None or Path(checkpoint).is_dir()
        return LlmApiContext(
            model_name(resolved),
            args,
            decoupled(resolved),
            0,
            instances,
            ids,
            manifest_of(resolved, self.name, None, inputs),
            checkpoint,
            None if local else p.target.revision,
            notes=tuple(get_engine(p.runtime.backend).serving_notes(resolved, args)),
        )

    def check(self, root: Path, models: dict[str, Model], manifest: dict[str, Any]) -> list[RepoIssue]:
        return check_llmapi(root, models, manifest) + check_llmapi_upstream(root, models, manifest)

    def tokenizer(self, root: Path, model: str, config_of: Callable[[str], dict[str, Any]]) -> tuple[Any, Any] | None:
        """model.yaml's `tokenizer` at its `tokenizer_revision`, else its `model` at its `revision` (LLM()'s
        checkpoint and the pin `build` wrote; BaseLlmArgs fields, see trtllm/tables)."""
        data = read_yaml(root / model / "1" / "model.yaml")
        data = data if isinstance(data, dict) else {}
        own = "tokenizer" if data.get("tokenizer") else "model"
        return data.get(own), data.get(f"{own}_revision" if own == "tokenizer" else "revision")


class Engines(TritonLayout):
    """TensorRT engines behind the C++ tensorrtllm backend (TRT-LLM <= 1.2.x), a draft engine beside the target
    where the mechanism drafts with a second model."""

    name = "engine"
    serve_note = (
        "note: the engine layout needs the real tensorrtllm backend (NGC image with a GPU); "
        "this local server has only the python backend"
    )
    templated_chat = True

    def context(self, resolved: Resolved, inputs: RenderInputs, llm_args: dict[str, Any] | None) -> EngineContext:
        p = resolved.profile
        world = p.hardware.tensor_parallel * p.hardware.pipeline_parallel
        params = get_engine(p.runtime.backend).triton_params(resolved)  # the mechanism's, as its plugin declares
        engine_dir = safe_value("engine_dir", inputs.engine_dir or "/engines/target")
        kv = p.serving.kv_cache_free_gpu_memory_fraction
        target_ids = device_ids(p.triton.instances, world)
        draft_ids = device_ids(1, 1)
        if params.get("draft_engine") and _gpus(target_ids) & _gpus(draft_ids):
            kv = shared_kv_fraction(kv)
        target = TrtllmModel("tensorrt_llm", engine_dir, target_ids, p.triton.instances, kv, **params.get("target", {}))
        draft = None
        streams = decoupled(resolved)
        if params.get("draft_engine"):
            if streams:
                raise UsageError(
                    "draft/target on the engine layout runs through the BLS, which cannot stream",
                    hint="set serving.streaming: false (and triton.decoupled: false)",
                )
            draft = TrtllmModel(
                "tensorrt_llm_draft",
                safe_value("draft_engine_dir", inputs.draft_engine_dir or "/engines/draft"),
                draft_ids,
                1,
                kv,
            )
        engine_max = (
            inputs.engine_max_draft_len
            if inputs.engine_max_draft_len is not None
            else params.get("engine_max_draft_len", resolved.draft_len)
        )  # what trtllm-build gives the engine (ReDrafter: beams x K)
        first_k = inputs.first_draft_len(resolved)
        return EngineContext(
            target,
            draft,
            p.serving.max_batch_size,
            streams,
            safe_value("tokenizer_dir", inputs.tokenizer_dir or local_ref(p.target.model)),
            first_k if draft else 0,
            manifest_of(resolved, self.name, engine_max, inputs, ORCHESTRATOR if draft else None),
            safe_value("site_packages", inputs.site_packages or ""),
            batch_scheduler_policy="guaranteed_no_evict",
            max_queue_size=0,
            bls_instances=p.serving.max_batch_size,
        )

    def check(self, root: Path, models: dict[str, Model], manifest: dict[str, Any]) -> list[RepoIssue]:
        return check_decoupled(models) + check_draft_tokens(models, manifest) + check_engine_upstream(models, manifest)

    def tokenizer(self, root: Path, model: str, config_of: Callable[[str], dict[str, Any]]) -> tuple[Any, Any] | None:
        """The preprocessing model's `tokenizer_dir` parameter."""
        return string_parameter(config_of("preprocessing"), "tokenizer_dir"), None
