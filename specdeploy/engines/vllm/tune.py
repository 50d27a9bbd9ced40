"""`tune --backend vllm`: the tuner's measurements on the real vLLM (measure.py runs one offline engine per K).

An engine's speculative config, K included, is fixed when it starts, and a start costs a minute or more here, so
one engine per K serves every tune concurrency, `tune.repeats` rounds of them (measure.py), and is started once
however many of the tuner's requests read it: `acceptance` reads the K engine's per-position counters summed over
all its waves (the factorized tuner's histogram), `e2e` the throughput, latencies and acceptance of the
(K, concurrency, repeat) wave, `cost` the time of one verification step derived from it (tokens per second over
tokens per step). A repeat beyond the rounds (a noisy point measured again) starts that K's engine afresh.
`mixed` replays the tuned schedule as the build emits it, `num_speculative_tokens_per_batch_size` in one engine,
beside plain decoding.

For the tune loop: `probe_draft_lens` has the factorized strategy probe step cost at plain decoding and K_max only
(a probe of another K would cost an engine start; the cost model interpolates), `measured(request)` says which
requests an engine already answered (free: a time budget stops only new engines), `replay_s()` what the replay
will cost (one engine). On a CPU build speed is counted in tokens per CPU second of vLLM's worker (`clock="cpu"`,
measure.py): the engine's own speed, steady on a machine shared with other work, where its wall-clock speed moves
with the neighbours; every result keeps both (docs/engines/vllm.md, "Tuning").
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

from specdeploy.engines.vllm.measure import Job, Point, Result, measure
from specdeploy.metrics import OUTPUT_THROUGHPUT, measured
from specdeploy.tune.types import PLAIN_THROUGHPUT, Request


class VllmBackend:
    probe_draft_lens = 1
    """Draft lengths above 0 the factorized strategy probes step cost at (the largest): each costs an engine."""

    def __init__(self, resolved: Any, setup: Any, work: Path, *, clock: str = "wall") -> None:
        self.resolved, self.setup, self.work, self.clock = resolved, setup, work, clock
        self.rounds = max(1, int(setup.repeats))
        self._engines: dict[tuple[int, int], Result] = {}
        self._replays: dict[tuple[tuple[int, int], ...], Result] = {}
        self.starts: list[dict[str, Any]] = []
        """Per engine started: K, its start and its whole run in seconds (the tune's device time)."""

    def __call__(self, req: Request) -> dict[str, Any]:
        return dict(getattr(self, req.kind)(req))

    def job(self, k: int, schedule: dict[int, int] | None = None, rounds: int | None = None) -> Job:
        """The engine of K = `k` (0: plain; with a `{concurrency: K}` schedule, K is its largest) as the build would
        emit it, the speculative config resolved to the folders vLLM loads (the shipped models in its layouts)."""
        from specdeploy.engines.vllm.actions import emitted, model_source
        from specdeploy.execute.fetch import reference_path
        from specdeploy.prompts import sample_prompts

        profile = self.resolved.profile
        shipped = {
            role: {"kind": "reference"}
            for role, ref in (("fetch.target", profile.target.model), ("fetch.draft", profile.speculative.draft_model))
            if ref and reference_path(ref) is not None
        }
        tuned: dict[str, Any] = {"draft_len": k}
        if schedule:
            tuned |= {"schedule": {str(c): v for c, v in schedule.items()}, "max_concurrency": max(schedule)}
        out, _ = emitted(self.resolved, {**shipped, "tune.draft_len": tuned}) if k else (None, None)
        spec = out.speculative if out is not None else None
        model, _ = model_source(profile.target.model, profile.target.revision, shipped.get("fetch.target", {}))
        records = sample_prompts(self.setup.dataset, self.setup.prompts)
        dtype = profile.target.dtype
        return Job(
            model=Path(str(model)),
            prompts=[(r.turns[0], not r.raw) for r in records],
            concurrency=tuple(sorted(schedule) if schedule else self.setup.concurrency),
            max_tokens=self.setup.output_len,
            speculative_config=spec,
            dtype="float32" if dtype == "auto" else dtype,
            max_model_len=profile.serving.max_seq_len or 2048,
            repeats=rounds or self.rounds,
        )

    def run(self, job: Job, name: str, k: int) -> tuple[Result, float]:
        """Start the engine of `job` (logged as `name`, K = `k`): its result and the seconds it took."""
        from specdeploy.engines.vllm import env

        began = time.monotonic()
        run = measure(env.require().python, job, self.work / "logs" / f"vllm-{name}.log")
        spent = time.monotonic() - began
        self.starts.append({"k": k, "engine": name, "start_s": round(run.start_s, 1), "run_s": round(spent, 1)})
        return run, spent

    def engine(self, k: int, repeat: int = 0) -> tuple[Result, float]:
        """The engine of K = `k` that holds round `repeat` (started on first use) and the seconds it cost now."""
        key = (k, repeat // self.rounds)
        if key in self._engines:
            return self._engines[key], 0.0
        self._engines[key], spent = self.run(self.job(k), f"k{k}-{key[1]}", k)
        return self._engines[key], spent

    def measured(self, req: Request) -> bool:
        """The request reads an engine that already ran (it costs no device time)."""
        if req.kind == "mixed":
            return req.schedule in self._replays and (0, 0) in self._engines
        return (req.k, req.repeat // self.rounds) in self._engines

    def replay_s(self) -> float:
        """What the mixed replay will cost: one engine, as long as the median engine so far."""
        return statistics.median(s["run_s"] for s in self.starts) if self.starts else 0.0

    def _point(self, k: int, concurrency: int, repeat: int = 0) -> tuple[Point, float]:
        run, cost = self.engine(k, repeat)
        return run.at(concurrency, repeat % self.rounds), cost

    def _speed(self, point: Point) -> float:
        return point.tokens_per_cpu_s if self.clock == "cpu" else point.output_token_throughput

    def acceptance(self, req: Request) -> dict[str, Any]:
        """The histogram of every wave of the K engine: acceptance does not depend on the concurrency (greedy),
        so all of them are samples of it."""
        run, cost = self.engine(req.k, 0)
        hist = [0.0] * (req.k + 1)
        steps = accepted = 0
        for p in run.points:
            counts = p.histogram()
            hist = [a + b for a, b in zip(hist, counts + [0.0] * (len(hist) - len(counts)), strict=True)]
            steps, accepted = steps + p.drafts, accepted + p.accepted
        return {"hist": hist, "per_category": {}, "al": 1.0 + accepted / steps if steps else 1.0, "cost_s": cost}

    def cost(self, req: Request) -> dict[str, Any]:
        point, cost = self._point(req.k, req.concurrency, req.repeat)
        per_step, speed = req.concurrency * point.acceptance_length, self._speed(point)
        return {"step_s": per_step / speed if speed else 0.0, "cost_s": cost}

    def e2e(self, req: Request) -> dict[str, Any]:
        point, cost = self._point(req.k, req.concurrency, req.repeat)
        speed = self._speed(point)
        wall = point.output_token_throughput
        scale = speed / wall if wall else 1.0  # the chosen clock's rates
        return {
            **measured(
                point.request_throughput * scale,
                speed,
                speed / req.concurrency,
                ttft=point.ttft_ms,
                tpot=point.tpot_ms,
                itl=point.itl_ms,
            ),
            "clock": self.clock,
            "wall_tps": point.output_token_throughput,
            "cpu_tps": point.tokens_per_cpu_s,
            "al": point.acceptance_length,
            "cost_s": cost,
        }

    def mixed(self, req: Request) -> dict[str, Any]:
        """The schedule in one engine with vLLM's per-batch-size K, each concurrency once, beside plain decoding's
        first round at that concurrency (the plain engine's)."""
        schedule = dict(req.schedule)
        cost = 0.0
        if req.schedule not in self._replays:
            job = self.job(max(schedule.values()), schedule, rounds=1)
            self._replays[req.schedule], cost = self.run(job, "schedule", max(schedule.values()))
        run, per = self._replays[req.schedule], []
        for c, k in req.schedule:
            plain, more = self._point(0, c)
            point, cost = run.at(c), cost + more
            per.append(
                {
                    "concurrency": c,
                    "k": k,
                    OUTPUT_THROUGHPUT: self._speed(point),
                    PLAIN_THROUGHPUT: self._speed(plain),
                    "draft_tokens_per_draft": point.draft_tokens / point.drafts if point.drafts else 0.0,
                    "al": point.acceptance_length,
                }
            )
        return {
            OUTPUT_THROUGHPUT: statistics.mean(p[OUTPUT_THROUGHPUT] for p in per),
            PLAIN_THROUGHPUT: statistics.mean(p[PLAIN_THROUGHPUT] for p in per),
            "per_concurrency": per,
            "cost_s": cost,
        }
