"""Resolved: a valid profile and the facts it resolved to. A value type at the bottom (it imports no behaviour):
`resolve.resolver.resolve` builds it, every later stage reads it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from specdeploy.issues import Issue
    from specdeploy.profile.loader import LoadedProfile
    from specdeploy.profile.schema import Profile
    from specdeploy.resolve.gpus import GpuSpec
    from specdeploy.resolve.hub import ConfigLookup
    from specdeploy.resolve.memory import Fit
    from specdeploy.resolve.model_spec import ModelSpec


@dataclass(frozen=True)
class Resolved:
    """A valid profile and the facts it resolved to; `notes` holds warnings and skipped checks."""

    loaded: LoadedProfile
    target_lookup: ConfigLookup
    draft_lookup: ConfigLookup | None
    gpu: GpuSpec | None
    line: Any
    """The engine's release line (`ReleaseLine`: TensorRT-LLM's `VersionLine`), None for an engine without."""
    fit: Fit | None
    draft_len: int
    max_num_tokens: int
    notes: tuple[Issue, ...] = field(default_factory=tuple)
    draft_lens: tuple[int, ...] = ()
    """draft_len: auto: the K range `tune` searches (`profile.rules.draft_len_candidates`, the one source)."""
    clamp_rule: str | None = None
    """How the engine's release bounds a tuned schedule (TRT-LLM 1.2: K at concurrency 1 caps every other K); None
    when nothing is tuned or the release does not bound it (the engine's `schedule_clamp`)."""

    @property
    def profile(self) -> Profile:
        """The validated profile."""
        return self.loaded.profile

    @property
    def target(self) -> ModelSpec | None:
        return self.target_lookup.spec

    @property
    def draft(self) -> ModelSpec | None:
        return self.draft_lookup.spec if self.draft_lookup else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target.to_dict() if self.target else {"unresolved": self.target_lookup.reason},
            "draft": (self.draft.to_dict() if self.draft else {"unresolved": self.draft_lookup.reason})
            if self.draft_lookup
            else None,
            "gpu": self.gpu.name if self.gpu else None,
            "gpu_figures": (self.gpu.source if self.gpu.user_given else "built-in table") if self.gpu else None,
            "engine": self.profile.runtime.backend,
            "release_line": self.line.name if self.line else None,
            "fit": self.fit.to_dict() if self.fit else None,
            "draft_len": self.draft_len,
            "draft_lens": list(self.draft_lens),
            "clamp": self.clamp_rule,
            "max_num_tokens": self.max_num_tokens,
            "notes": [n.to_dict() for n in self.notes],
        }
