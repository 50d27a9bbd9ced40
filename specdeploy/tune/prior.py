"""The prior the factorized strategy calibrates: the analytic cost model of the profile's pair on its GPU (or a
pseudo-GPU for the CPU runtime), with efficiency fitted to the measured plain-decoding steps (perfmodel.calibrate)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from specdeploy.errors import UsageError
from specdeploy.perfmodel import AnalyticTimer, Efficiency, Measured, calibrate, pseudo_gpu
from specdeploy.perfmodel.context import decode_context
from specdeploy.perfmodel.predict import StepTimer
from specdeploy.resolve.resolved import Resolved


def analytic_timer(resolved: Resolved, eff: Efficiency | None = None) -> AnalyticTimer:
    profile = resolved.profile
    if resolved.target is None:
        raise UsageError(
            f"the performance model needs the target's config.json ({profile.target.model})",
            hint="pass a local folder, or pre-fill the Hugging Face cache",
        )
    return AnalyticTimer(
        resolved.target,
        resolved.gpu or pseudo_gpu(),
        mechanism=profile.speculative.mechanism,
        draft=resolved.draft,
        quantization=profile.target.quantization,
        tp=profile.hardware.tensor_parallel,
        context=decode_context(profile.tune.output_len),
        eff=eff,
    )


def calibrated_prior(resolved: Resolved):  # noqa: ANN201 - a PriorFactory
    """K=0 step times per batch -> (AnalyticTimer with fitted efficiency, the calibration record)."""
    return prior_for(lambda eff: analytic_timer(resolved, eff))


def prior_for(make: Callable[[Efficiency | None], AnalyticTimer]):  # noqa: ANN201 - a PriorFactory
    """Calibrate `make(eff)`'s target on the measured plain-decoding steps (needs two batch sizes)."""

    def factory(plain: Mapping[int, float]) -> tuple[StepTimer, dict[str, Any] | None]:
        base = make(None)
        if len(plain) < 2:
            return base, None
        cal = calibrate(
            base.target,
            base.gpu,
            [Measured(b, 1, base.ctx.context, s) for b, s in sorted(plain.items())],
            quantization=base.ctx.quantization,
            tp=base.ctx.tp,
        )
        return make(cal.eff), cal.to_dict()

    return factory
