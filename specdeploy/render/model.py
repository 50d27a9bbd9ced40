"""The rendered repository's model: what every layout's typed context offers the writer (`RepoContext`; templates
never see the raw profile), the manifest written beside it as `specdeploy-repo.json`, and what the build decided
for it (`RenderInputs`). Value types at the bottom: a layout (plugin/layout.py) builds its context from a Resolved
profile, `render.writer` renders it."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

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


class RepoContext(Protocol):
    """What the writer reads of a layout's typed context (each layout defines its own frozen dataclass beside its
    builder, in its engine's package: `TritonLayout.context`); the templates read the rest as `c`."""

    @property
    def layout(self) -> str:
        """The layout's name (recorded in the manifest and the render report)."""

    @property
    def manifest(self) -> RepoManifest: ...

    @property
    def folders(self) -> dict[str, str]:
        """Template folder -> model folder in the repository."""


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
        return (
            resolved.draft_len if self.draft_len is None else self.draft_len,
            dict(schedule) if schedule else None,
            spec.max_concurrency if self.max_concurrency is None else self.max_concurrency,
        )

    def first_draft_len(self, resolved: Resolved) -> int:
        """K for one request at a time (what a batch-0 python model or the BLS default uses)."""
        draft_len, schedule, _ = self.plan(resolved)
        return schedule[min(schedule)] if schedule else draft_len
