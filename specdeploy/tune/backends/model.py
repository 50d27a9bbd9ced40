"""The `model` backend: measurements answered by the performance model in place of a GPU (what-if, seconds).

A `World` is the truth the tuner must discover: a step timer, an acceptance profile and an end-to-end efficiency.
With `noise` > 0 every measurement gets realistic noise (lognormal, plus rare slow outliers, plus sampling noise
of a finite acceptance run) so the replay suite tests the tuner against what a GPU would give it. `cost_s` is the
simulated device time of each run (a restart + warm-up per end-to-end run, then the tokens at the true speed).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from specdeploy.metrics import OUTPUT_THROUGHPUT, PER_USER_THROUGHPUT, REQUEST_THROUGHPUT, key
from specdeploy.perfmodel.acceptance import AcceptanceProfile
from specdeploy.perfmodel.predict import StepTimer
from specdeploy.tune.types import PLAIN_THROUGHPUT, Request

E2E_OVERHEAD_S = 10.0
"""Simulated warm-up (and amortised restart: PyTorch restarts per K, docs/design/trtllm.md §5) per end-to-end run."""
PROBE_OVERHEAD_S = 1.0
PROBE_STEPS = 32
OUTLIER_P = 0.03


@dataclass
class World:
    timer: StepTimer
    profile: AcceptanceProfile
    prefill_s: Callable[[int], float] = lambda _: 0.0
    """Time to prefill c prompts (TTFT before queueing)."""
    e2e_efficiency: float = 0.93
    """Share of decode time in an end-to-end run (prefill, scheduling); common to every K."""
    al_override: dict[int, float] = field(default_factory=dict)
    """Non-chain mechanisms: true AL per K where it is not the prefix sum."""

    def al(self, k: int) -> float:
        return self.al_override.get(k, self.profile.expected_al(k)) if k else 1.0

    def point(self, c: int, k: int) -> dict[str, float]:
        """One value per metric (a prediction has no distribution): every step delivers AL tokens to each of the
        c requests, so ITL is the step and TPOT the step over AL; a joining request waits for the running step,
        then its prefill."""
        step = self.timer.step_seconds(c, k)
        al = self.al(k)
        system = c * al / step * self.e2e_efficiency
        return {
            OUTPUT_THROUGHPUT: system,
            PER_USER_THROUGHPUT: system / c,
            key("ttft"): 1e3 * (self.prefill_s(c) + step),
            key("tpot"): 1e3 * step / al,
            key("itl"): 1e3 * step,
            "al": al,
            "step_s": step,
        }


class ModelBackend:
    def __init__(
        self,
        world: World,
        *,
        noise: float = 0.0,
        seed: int = 0,
        prompts: int = 32,
        output_len: int = 128,
        crash: Callable[[Request], bool] | None = None,
        pace_s: float = 0.0,
    ) -> None:
        self.world, self.noise, self.rng, self.pace_s = world, noise, random.Random(seed), pace_s
        self.prompts, self.output_len, self.crash = prompts, output_len, crash

    def _jitter(self, sigma: float, outliers: bool = True) -> float:
        """Run-to-run noise; outliers are slow runs (a noisy neighbour, clocks), so not for acceptance."""
        if not self.noise:
            return 1.0
        slow = 0.85 if outliers and self.rng.random() < OUTLIER_P else 1.0
        return math.exp(self.rng.gauss(0.0, sigma)) * slow

    def __call__(self, req: Request) -> dict[str, Any]:
        if self.crash and self.crash(req):
            raise RuntimeError(f"simulated crash at {req.key}")
        if self.pace_s:
            time.sleep(self.pace_s)
        return getattr(self, req.kind)(req)

    def _run_s(self, c: int, k: int) -> float:
        requests = max(self.prompts, c)
        return E2E_OVERHEAD_S + requests * self.output_len / self.world.point(c, k)[OUTPUT_THROUGHPUT]

    def acceptance(self, req: Request) -> dict[str, Any]:
        steps = max(1, int(self.prompts * self.output_len / max(self.world.al(req.k), 1.0)))
        a = [1.0, *(self.world.profile.prefix[i] if i < self.world.profile.k_max else 0.0 for i in range(req.k))]
        shares = [a[n] - a[n + 1] for n in range(req.k)] + [a[req.k]]
        hist: list[float]
        if self.noise:  # finite sample of steps; per-prompt spread in how predictable the text is
            hist = [0.0] * (req.k + 1)
            for _ in range(steps):
                n = self.rng.choices(range(req.k + 1), weights=shares)[0]
                hist[n] += 1
        else:
            hist = [s * steps for s in shares]
        return {
            "hist": hist,
            "al": self.world.al(req.k) * self._jitter(self.noise / 2, outliers=False),
            "steps": steps,
            "cost_s": self._run_s(req.concurrency, req.k),
        }

    def cost(self, req: Request) -> dict[str, Any]:
        step = self.world.timer.step_seconds(req.concurrency, req.k) / self._jitter(self.noise / 2)
        return {"step_s": step, "cost_s": PROBE_OVERHEAD_S + PROBE_STEPS * step}

    def e2e(self, req: Request) -> dict[str, Any]:
        p = self.world.point(req.concurrency, req.k)
        j = self._jitter(self.noise)
        tokens_per_s = p[OUTPUT_THROUGHPUT] * j
        return {
            **p,
            REQUEST_THROUGHPUT: tokens_per_s / self.output_len,
            OUTPUT_THROUGHPUT: tokens_per_s,
            PER_USER_THROUGHPUT: p[PER_USER_THROUGHPUT] * j,
            key("tpot"): p[key("tpot")] / j,
            key("itl"): p[key("itl")] / j,
            "cost_s": self._run_s(req.concurrency, req.k),
        }

    def mixed(self, req: Request) -> dict[str, Any]:
        """Equal time at each concurrency of the schedule; the K switches cost nothing in the model."""
        spec = [self.world.point(c, k)[OUTPUT_THROUGHPUT] for c, k in req.schedule]
        off = [self.world.point(c, 0)[OUTPUT_THROUGHPUT] for c, _ in req.schedule]
        return {
            OUTPUT_THROUGHPUT: sum(spec) / len(spec) * self._jitter(self.noise),
            PLAIN_THROUGHPUT: sum(off) / len(off) * self._jitter(self.noise),
            "per_concurrency": [
                {"concurrency": c, "k": k, OUTPUT_THROUGHPUT: s} for (c, k), s in zip(req.schedule, spec, strict=True)
            ],
            "cost_s": 2 * E2E_OVERHEAD_S + sum(self._run_s(c, k) for c, k in req.schedule),
        }


def profile_world(resolved: Any, profile: AcceptanceProfile | None = None, eff: Any = None) -> World:
    """The world of a shipped profile as the performance model sees it: the acceptance given, else the user's own
    (tune.acceptance_rates / tune.acceptance_al), else the mechanism's published prior."""
    from specdeploy.perfmodel import AcceptanceProfile, prior_profile
    from specdeploy.perfmodel.context import PROMPT_TOKENS
    from specdeploy.perfmodel.cost import forward_cost
    from specdeploy.tune.prior import analytic_timer

    timer = analytic_timer(resolved, eff)
    prefill = lambda c: (  # noqa: E731
        forward_cost(
            timer.target,
            timer.gpu,
            batch=c,
            tokens=PROMPT_TOKENS,
            context=PROMPT_TOKENS,
            quantization=timer.ctx.quantization,
            tp=timer.ctx.tp,
            eff=timer.eff,
        ).total_s
    )
    tune = resolved.profile.tune
    profile = profile or AcceptanceProfile.from_user(tune.acceptance_al, tune.acceptance_rates)
    return World(timer, profile or prior_profile(resolved.profile.speculative.mechanism), prefill)
