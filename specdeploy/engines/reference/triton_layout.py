"""The reference engine's Triton layout (`reference`): one python model around the CPU reference runtime, whose
logic is triton_model.py (templates/triton/reference). Its repository names this machine's model folders and the
serving host's site-packages, so it is served here (`specdeploy serve`), not shipped by `deploy`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specdeploy.plugin.layout import TritonLayout, string_parameter
from specdeploy.render.context import decoupled, local_ref, manifest_of, model_name, safe_value
from specdeploy.render.model import RenderInputs, RepoManifest
from specdeploy.resolve.resolved import Resolved


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


class ReferenceLayout(TritonLayout):
    """The CPU reference runtime behind Triton's python backend."""

    name = "reference"

    def context(self, resolved: Resolved, inputs: RenderInputs, llm_args: dict[str, Any] | None) -> ReferenceContext:
        p = resolved.profile
        spec = p.speculative
        site = inputs.site_packages or ""  # the serving host's ($SPECDEPLOY_SITE_PACKAGES): never this machine's
        _, schedule, max_concurrency = inputs.plan(resolved)
        first_k = inputs.first_draft_len(resolved)
        return ReferenceContext(
            model_name(resolved),
            safe_value("site_packages", site),
            safe_value("target.model", local_ref(p.target.model)),
            safe_value("draft_model", local_ref(spec.draft_model) if spec.draft_model else ""),
            spec.mechanism,
            first_k,
            json.dumps({str(k): v for k, v in schedule.items()}) if schedule else "",
            max_concurrency or 0,
            p.tune.output_len,
            p.triton.instances,
            decoupled(resolved),
            manifest_of(resolved, self.name, None, inputs),
            max_seq_len=p.serving.max_seq_len,
            max_batch_size=p.serving.max_batch_size,
        )

    def tokenizer(self, root: Path, model: str, config_of: Callable[[str], dict[str, Any]]) -> tuple[Any, Any] | None:
        """The model's `target_ref` parameter (resolved as the runtime resolves it: `Engine.tokenizer_folder`)."""
        return string_parameter(config_of(model), "target_ref"), None
