"""vLLM served through Triton: the `vllm` layout, a model repository for Triton's vLLM backend
(triton-inference-server/vllm_backend; templates/triton/vllm), one model whose `1/model.json` is vLLM's
AsyncEngineArgs (triton_args.py); its `check-repo` rules: triton_checks.py. docs/engines/vllm.md, "Through Triton".
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specdeploy.engines.vllm.triton_checks import check_vllm_upstream
from specdeploy.errors import UsageError
from specdeploy.plugin.layout import TritonLayout
from specdeploy.plugin.registry import get_engine
from specdeploy.render.check_pbtxt import Model, RepoIssue
from specdeploy.render.context import manifest_of, model_name, safe_value
from specdeploy.render.model import RenderInputs, RepoManifest
from specdeploy.resolve.resolved import Resolved


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


class VllmLayout(TritonLayout):
    """Triton's vLLM backend: decoupled, batching itself."""

    name = "vllm"

    def context(self, resolved: Resolved, inputs: RenderInputs, llm_args: dict[str, Any] | None) -> VllmContext:
        p = resolved.profile
        if p.triton.decoupled is False:
            raise UsageError(
                "triton.decoupled: Triton's vLLM backend needs a decoupled model (its model.py asserts it)",
                hint="leave triton.decoupled unset for the vllm layout",
            )
        draft_len, schedule, max_concurrency = inputs.plan(resolved)
        args = get_engine(p.runtime.backend).serving_args(
            resolved, draft_len=draft_len, schedule=schedule, max_concurrency=max_concurrency
        )
        for key in ("model", "revision"):
            if isinstance(args.get(key), str):
                safe_value(f"model.json {key}", args[key])
        return VllmContext(
            model_name(resolved), args, p.triton.instances, manifest_of(resolved, self.name, None, inputs)
        )

    def check(self, root: Path, models: dict[str, Model], manifest: dict[str, Any]) -> list[RepoIssue]:
        return check_vllm_upstream(root, models, manifest)
