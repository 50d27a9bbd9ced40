"""TuneSetup: everything a tune needs from a resolved profile, validated once (bad input -> exit 2)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any

from specdeploy.errors import UsageError
from specdeploy.profile.rules import draft_len_candidates
from specdeploy.prompts import check_dataset
from specdeploy.resolve.resolved import Resolved

OBJECTIVES = ("throughput", "latency", "goodput")


@dataclass(frozen=True)
class TuneSetup:
    profile: str
    mechanism: str
    chain: bool
    """A K-token draft is the prefix of the K_max draft: one run at K_max gives AL for every K."""
    concurrency: tuple[int, ...]
    draft_lens: tuple[int, ...]
    objective: str = "throughput"
    p99_itl_ms: float | None = None
    p99_ttft_ms: float | None = None
    repeats: int = 3
    prompts: int = 32
    output_len: int = 128
    dataset: str = "mt-bench"
    time_budget_s: float | None = None
    line: str | None = None
    """TRT-LLM line the schedule is emitted for (`1.2`, `1.3`), None for the reference runtime."""
    trtllm_version: str | None = None
    max_batch_size: int = 64
    engine_max_draft_len: int = 64
    probe_draft_lens: int | None = None
    """How many draft lengths above 0 the factorized strategy probes step cost at, the largest among them (None:
    every one up to its PROBE_ALL). The measuring backend says so where a probe of another K costs an engine start."""
    extra: dict[str, Any] = field(default_factory=dict)
    predicted: bool = False
    """The backend predicts (the performance model): the same request gives the same numbers, so every point is
    asked once (no repeats, no second probe) and shows one value."""

    @property
    def k_max(self) -> int:
        return max(self.draft_lens)

    @property
    def sla(self) -> dict[str, float]:
        return {k: v for k, v in (("p99_itl_ms", self.p99_itl_ms), ("p99_ttft_ms", self.p99_ttft_ms)) if v}

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "concurrency": list(self.concurrency), "draft_lens": list(self.draft_lens)}

    def hash(self, backend: str, strategy: str, code: str = "") -> str:
        """Identity of a checkpoint: same setup, backend, strategy and measuring code -> measurements can be
        replayed (an interrupted tune resumes; one after a code change measures afresh)."""
        blob = json.dumps(
            {"setup": self.to_dict(), "backend": backend, "strategy": strategy, "code": code}, sort_keys=True
        )
        return hashlib.sha256(blob.encode()).hexdigest()


def setup_from(resolved: Resolved) -> TuneSetup:
    """Validate the profile's `tune:` section against the mechanism and the engine (exit 2 on bad input)."""
    from specdeploy.plugin.registry import find

    profile = resolved.profile
    spec, tune = profile.speculative, profile.tune
    if spec.mechanism == "none":
        raise UsageError(
            "nothing to tune: speculative.mechanism is none",
            hint="pick a mechanism (`specdeploy mechanisms` lists them)",
        )
    plugin = find(spec.mechanism)
    engine_max = plugin.max_draft_len if plugin else 64
    if isinstance(spec.draft_len, int):  # a fixed draft length is the engine's ceiling
        engine_max = min(engine_max, spec.draft_len)
    ks = draft_len_candidates(profile, plugin) or tuple(range(1, min(engine_max, 8) + 1))
    if max(ks) > engine_max:
        raise UsageError(
            f"tune.draft_lens goes up to {max(ks)}, beyond the engine's max_draft_len {engine_max}",
            hint=f"keep tune.draft_lens <= {engine_max} (or raise speculative.draft_len / use auto)",
        )
    check_dataset(tune.dataset)  # `validate` checked it too; the file may have changed since
    conc = tuple(c for c in tune.concurrency if c <= profile.serving.max_batch_size)
    if not conc:
        raise UsageError(f"every tune.concurrency is above serving.max_batch_size {profile.serving.max_batch_size}")
    return TuneSetup(
        profile=resolved.loaded.name,
        mechanism=spec.mechanism,
        chain=bool(plugin.chain) if plugin else False,
        concurrency=conc,
        draft_lens=ks,
        objective=tune.objective,
        p99_itl_ms=tune.sla.p99_itl_ms,
        p99_ttft_ms=tune.sla.p99_ttft_ms,
        repeats=tune.repeats,
        prompts=tune.prompts,
        output_len=tune.output_len,
        dataset=tune.dataset,
        time_budget_s=tune.time_budget_s,
        line=resolved.line.name if resolved.line else None,
        # the TensorRT-LLM release whose schedule rules clamp the result: only a profile whose engine has them
        trtllm_version=profile.runtime.trtllm_version
        if resolved.line and _release_field(resolved) == "trtllm_version"
        else None,
        max_batch_size=profile.serving.max_batch_size,
        engine_max_draft_len=engine_max,
        # the user's own acceptance shapes the model backend's world: a change must not replay old measurements
        extra={
            k: v for k, v in (("acceptance_al", tune.acceptance_al), ("acceptance_rates", tune.acceptance_rates)) if v
        },
    )


def _release_field(resolved: Resolved) -> str | None:
    from specdeploy.plugin.registry import get_engine

    return get_engine(resolved.profile.runtime.backend).version_field
