"""What-if tuning: the cost model in place of measurements, in the result shape of a tuning run.

`specdeploy tune PROFILE --backend model` wraps `whatif`; the result is plain JSON (see README.md, "whatif result").
"""

from __future__ import annotations

from typing import Any

from specdeploy.perfmodel.acceptance import AcceptanceProfile
from specdeploy.perfmodel.cost import Efficiency
from specdeploy.perfmodel.predict import AnalyticTimer, predict
from specdeploy.perfmodel.priors import prior_profile
from specdeploy.resolve.gpus import GpuSpec
from specdeploy.resolve.model_spec import ModelSpec

FORMAT = "specdeploy.whatif/1"


def whatif(
    target: ModelSpec,
    gpu: GpuSpec,
    mechanism: str,
    *,
    draft: ModelSpec | None = None,
    quantization: str = "none",
    tp: int = 1,
    concurrency: list[int] | None = None,
    context: int = 2048,
    k_values: list[int] | None = None,
    profile: AcceptanceProfile | None = None,
    eff: Efficiency | None = None,
    tie_tolerance: float = 0.0,
) -> dict[str, Any]:
    """Predicted curves and schedule (concurrency -> K, max_concurrency) for every K in `k_values` plus K = 0."""
    concurrency = sorted(set(concurrency or [1, 2, 4, 8, 16, 32, 64, 128]))
    ks = sorted({0, *(k_values or range(1, 9))})
    eff = eff or Efficiency()
    profile = profile or prior_profile(mechanism)
    timer = AnalyticTimer(
        target, gpu, mechanism=mechanism, draft=draft, quantization=quantization, tp=tp, context=context, eff=eff
    )
    curves = predict(timer, profile, concurrency, ks, tie_tolerance)
    return {
        "format": FORMAT,
        "backend": "model",
        "setup": {
            "target": target.name,
            "draft": draft.name if draft else None,
            "gpu": gpu.name,
            "mechanism": mechanism,
            "quantization": quantization,
            "tp": tp,
            "context": context,
            "efficiency": eff.to_dict(),
        },
        "acceptance": {**profile.to_dict(), "al": {str(k): profile.expected_al(k) for k in ks}},
        "candidates": ks,
        "concurrency": concurrency,
        "points": [p.to_dict() for p in curves.points],
        "schedule": curves.schedule(),
        "max_concurrency": curves.max_concurrency,
    }
