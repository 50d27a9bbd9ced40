"""The `reference` backend: the CPU reference runtime, for real. Acceptance from RunStats' histogram at K_max
(per dataset category), step cost from `probe_costs` (target forward over K+1 tokens + K drafter forwards),
end-to-end runs with `generate` at (c, K), the schedule replayed concurrency by concurrency. An end-to-end run's
per-user throughput is its output token throughput over c (docs/design/metrics.md)."""

from __future__ import annotations

import time
from typing import Any

from specdeploy.errors import UsageError
from specdeploy.metrics import measured
from specdeploy.resolve.resolved import Resolved
from specdeploy.tune.setup import TuneSetup
from specdeploy.tune.types import Request, mixed_point

MAX_PROMPT_TOKENS = 256
"""Prompts are cut to their last tokens so a CPU run stays short (documented in the result's setup)."""


class ReferenceBackend:
    def __init__(
        self,
        resolved: Resolved | None,
        setup: TuneSetup,
        *,
        pair: Any = None,
        prompts: list[tuple[str, list[int]]] | None = None,
        clock: str = "wall",
    ) -> None:
        """clock="cpu": end-to-end speed in tokens per process-CPU-second, for a machine whose cores are shared
        with other work (wall time then measures the neighbours); meaningful with one torch thread."""
        self.resolved, self.setup, self.clock = resolved, setup, clock
        self._pair, self._prompts = pair, prompts
        self._probes: dict[tuple[int, int], dict[str, Any]] = {}

    @property
    def pair(self) -> Any:
        if self._pair is None:
            from specdeploy.engines.reference.runtime import load_pair_for

            assert self.resolved is not None
            spec = self.resolved.profile.speculative
            self._pair = load_pair_for(self.resolved.profile.target.model, spec.mechanism, spec.draft_model)
        return self._pair

    @property
    def prompts(self) -> list[tuple[str, list[int]]]:
        """(category, token ids) for the profile's dataset, at most `tune.prompts` of them."""
        if self._prompts is None:
            from specdeploy.prompts import encode_prompt, sample_prompts

            ds = self.setup.dataset
            records = sample_prompts(ds, self.setup.prompts)
            self._prompts = [
                (r.category or "all", encode_prompt(self.pair.tokenizer, r)[-MAX_PROMPT_TOKENS:]) for r in records
            ]
            self._prompts = [(c, ids) for c, ids in self._prompts if ids]
            if not self._prompts:
                raise UsageError(f"tune.dataset {ds} has no usable prompts")
        return self._prompts

    def _generate(self, prompts: list[list[int]], k: int, c: int) -> Any:
        from specdeploy.engines.reference.runtime import generate

        mech = self.setup.mechanism if k > 0 else "none"
        return generate(self.pair, prompts, mech, max(k, 1) if k else 0, c, self.setup.output_len)[1]

    def __call__(self, req: Request) -> dict[str, Any]:
        return getattr(self, req.kind)(req)

    def acceptance(self, req: Request) -> dict[str, Any]:
        hist = [0.0] * (req.k + 1)
        per_cat: dict[str, list[float]] = {}
        wall = 0.0
        steps = tokens = 0
        for cat in sorted({c for c, _ in self.prompts}):
            stats = self._generate([ids for c, ids in self.prompts if c == cat], req.k, req.concurrency)
            per_cat[cat] = [share * stats.seq_steps for share in stats.accept_hist]  # shares -> step counts
            hist = [a + b for a, b in zip(hist, per_cat[cat], strict=False)]
            wall += stats.wall_time_s
            steps, tokens = steps + stats.seq_steps, tokens + stats.generated_tokens
        return {"hist": hist, "per_category": per_cat, "al": tokens / steps if steps else 1.0, "cost_s": wall}

    def cost(self, req: Request) -> dict[str, Any]:
        """One probe per concurrency covers every K: T(B, K) = target(B, K + 1) + K x drafter(B, 1). Repeat r (the
        strategy doubting a probe) reads a fresh probe of every K at that concurrency: a probe of one K alone
        measured ~40% faster than inside the full one, so only whole probes compare."""
        start = time.perf_counter()
        if (req.concurrency, req.repeat) not in self._probes:
            from specdeploy.engines.reference.runtime import probe_costs

            context = min(MAX_PROMPT_TOKENS, 128) + self.setup.output_len // 2
            self._probes[(req.concurrency, req.repeat)] = probe_costs(
                self.pair,
                batch_sizes=(req.concurrency,),
                new_tokens=tuple(range(1, self.setup.k_max + 2)),
                contexts=(context,),
                repeats=3,
                seed=req.repeat,
            )
        probe = self._probes[(req.concurrency, req.repeat)]
        target = {p["new_tokens"]: p["ms"] for p in probe["target"]}
        draft_ms = probe["drafter"][0]["ms"] if probe["drafter"] else 0.0
        step_ms = target[req.k + 1] + req.k * draft_ms
        return {"step_s": step_ms / 1e3, "cost_s": time.perf_counter() - start}

    def e2e(self, req: Request) -> dict[str, Any]:
        cpu = time.process_time()
        stats = self._generate([ids for _, ids in self.prompts], req.k, req.concurrency)
        cpu = time.process_time() - cpu
        system = stats.generated_tokens / cpu if self.clock == "cpu" and cpu > 0 else stats.tokens_per_s
        requests = system * stats.num_prompts / stats.generated_tokens if stats.generated_tokens else 0.0
        return {
            **measured(
                requests, system, system / req.concurrency, ttft=stats.ttft_ms, tpot=stats.tpot_ms, itl=stats.itl_ms
            ),
            "al": stats.acceptance_length,
            "cost_s": stats.wall_time_s,
        }

    def mixed(self, req: Request) -> dict[str, Any]:
        """Every concurrency of the schedule at its K next to plain decoding at that concurrency, the two run back
        to back so a slow spell of the machine hits both; where the schedule says K = 0 they are the same
        configuration, run once (two runs of one thing would only compare noise)."""
        return mixed_point(self.e2e, req.schedule)
