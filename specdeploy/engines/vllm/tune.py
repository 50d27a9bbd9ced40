"""`tune --backend vllm`: the tuner's measurements on the real vLLM (measure.py runs one offline engine per K).

An engine's speculative config, K included, is fixed when it starts, and a start costs minutes here, so one engine
per K serves every tune concurrency in waves (measure.py), and each engine is started once per repeat however many
of the tuner's requests read it: `acceptance` reads the K_max engine's per-position counters (the factorized
tuner's histogram), `e2e` and `mixed` the throughput, latencies and acceptance of the (K, concurrency) wave, `cost`
the time of one verification step derived from it (tokens per second over tokens per step).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specdeploy.engines.vllm.measure import Job, Point, Result, measure
from specdeploy.metrics import measured
from specdeploy.tune.types import Request, mixed_point


class VllmBackend:
    def __init__(self, resolved: Any, setup: Any, work: Path) -> None:
        self.resolved, self.setup, self.work = resolved, setup, work
        self._runs: dict[tuple[int, int], Result] = {}

    def __call__(self, req: Request) -> dict[str, Any]:
        return dict(getattr(self, req.kind)(req))

    def _job(self, k: int) -> Job:
        """The engine of K = `k` (0: plain) as the build would emit it, the speculative config resolved to the
        folders vLLM loads (the shipped models exported in its layouts)."""
        from specdeploy.engines.vllm.actions import emitted, model_source
        from specdeploy.execute.fetch import reference_path
        from specdeploy.prompts import sample_prompts

        profile = self.resolved.profile
        shipped = {role: {"kind": "reference"} for role, ref in (("fetch.target", profile.target.model),
                                                                 ("fetch.draft", profile.speculative.draft_model))
                   if ref and reference_path(ref) is not None}
        out, _ = emitted(self.resolved, {**shipped, "tune.draft_len": {"draft_len": k}}) if k else (None, None)
        spec = out.speculative if out is not None else None
        model, _ = model_source(profile.target.model, profile.target.revision, shipped.get("fetch.target", {}))
        records = sample_prompts(self.setup.dataset, self.setup.prompts)
        dtype = profile.target.dtype
        return Job(model=Path(str(model)), prompts=[(r.turns[0], not r.raw) for r in records],
                   concurrency=tuple(self.setup.concurrency), max_tokens=self.setup.output_len,
                   speculative_config=spec, dtype="float32" if dtype == "auto" else dtype,
                   max_model_len=profile.serving.max_seq_len or 2048)

    def _point(self, k: int, concurrency: int, repeat: int = 0) -> tuple[Point, float]:
        """The wave of `concurrency` on the engine of K = `k` (started on first use), and the engine's cost."""
        from specdeploy.engines.vllm import env

        fresh = (k, repeat) not in self._runs
        if fresh:
            log = self.work / "logs" / f"vllm-k{k}-r{repeat}.log"
            self._runs[(k, repeat)] = measure(env.require().python, self._job(k), log)
        run = self._runs[(k, repeat)]
        point = next(p for p in run.points if p.concurrency == concurrency)
        cost = run.start_s + sum(len(p.token_ids) / p.request_per_s for p in run.points if p.request_per_s) \
            if fresh else 0.0
        return point, cost

    def acceptance(self, req: Request) -> dict[str, Any]:
        point, cost = self._point(req.k, req.concurrency)
        return {"hist": point.histogram(), "per_category": {}, "al": point.acceptance_length, "cost_s": cost}

    def cost(self, req: Request) -> dict[str, Any]:
        point, cost = self._point(req.k, req.concurrency, req.repeat)
        per_step = req.concurrency * point.acceptance_length
        return {"step_s": per_step / point.output_tok_s if point.output_tok_s else 0.0, "cost_s": cost}

    def e2e(self, req: Request) -> dict[str, Any]:
        point, cost = self._point(req.k, req.concurrency, req.repeat)
        return {**measured(point.request_per_s, point.output_tok_s, point.output_tok_s / req.concurrency,
                           ttft=point.ttft_ms, tpot=point.tpot_ms, itl=point.itl_ms),
                "al": point.acceptance_length, "cost_s": cost}

    def mixed(self, req: Request) -> dict[str, Any]:
        """Each concurrency of the schedule at its K beside plain decoding at that concurrency."""
        return mixed_point(self.e2e, req.schedule)
