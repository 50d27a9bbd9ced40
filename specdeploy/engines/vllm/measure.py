"""Measure one vLLM configuration for real: start an offline engine in vLLM's own Python (scripts/llm_run.py), run
the tune prompts at each concurrency, greedy, and return what the tuner reads.

One engine serves every concurrency of a configuration (waves of c requests through the same `LLM`), `repeats`
times in rounds; the speculative config, K included, is fixed when an engine starts (docs/engines/vllm.md,
"Measuring").
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specdeploy.errors import StepFailed
from specdeploy.metrics import OUTPUT_THROUGHPUT, REQUEST_THROUGHPUT, distribution, latency_fields

SCRIPTS = Path(__file__).parent / "scripts"
KV_CACHE_GIB = 1
"""`VLLM_CPU_KVCACHE_SPACE`: a 135M model's cache for a few 2k-token sequences needs far less."""
START_TIMEOUT_S = 1800.0
WORKER = "VLLM::Worker"
"""The title vLLM gives its worker processes (`vllm/v1/executor/multiproc_executor.py @ v0.32.0`)."""


@dataclass(frozen=True)
class Job:
    """One engine: the model folder, its speculative config (None: plain decoding) and what to run through it."""

    model: Path
    prompts: list[tuple[str, bool]]
    """(text, apply the chat template)."""
    concurrency: tuple[int, ...] = (1,)
    max_tokens: int = 64
    speculative_config: dict[str, Any] | None = None
    dtype: str = "float32"
    enforce_eager: bool = False
    max_model_len: int = 2048
    repeats: int = 1
    """Rounds: every concurrency once per round, the same engine."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": str(self.model),
            "prompts": [{"text": t, "chat": c} for t, c in self.prompts],
            "concurrency": list(self.concurrency),
            "max_tokens": self.max_tokens,
            "dtype": self.dtype,
            "speculative_config": self.speculative_config,
            "enforce_eager": self.enforce_eager,
            "max_model_len": self.max_model_len,
            "repeats": self.repeats,
        }


@dataclass
class Point:
    """What one concurrency measured. Latencies in milliseconds; counters are this wave's, not the engine's."""

    concurrency: int
    output_token_throughput: float
    request_throughput: float
    ttft_ms: dict[str, float]
    tpot_ms: dict[str, float]
    itl_ms: dict[str, float]
    drafts: int
    draft_tokens: int
    accepted: int
    accepted_per_position: list[int]
    token_ids: list[list[int]] = field(repr=False, default_factory=list)
    repeat: int = 0
    cpu_s: dict[str, float] = field(default_factory=dict)
    """CPU seconds each of vLLM's processes (by name) spent on the wave (on a shared machine, steadier than its wall
    time)."""

    @property
    def tokens_per_cpu_s(self) -> float:
        """Output tokens per CPU second of vLLM's worker (the process that runs the model and the drafter; all of
        vLLM's processes where none is named so): on an idle machine its CPU time is the wave's wall time (17.6 s
        vs 17.7 s measured), on a shared one it leaves out the neighbours' share (docs/engines/vllm.md, "Tuning")."""
        worker = [t for name, t in self.cpu_s.items() if WORKER in name]
        cpu = sum(worker) if worker else sum(self.cpu_s.values())
        return sum(len(t) for t in self.token_ids) / cpu if cpu > 0 else 0.0

    @property
    def acceptance_length(self) -> float:
        """Tokens per verification step, bonus token included (1.0 without drafts)."""
        return 1.0 + self.accepted / self.drafts if self.drafts else 1.0

    def histogram(self) -> list[float]:
        """Steps that accepted exactly n = 0..K drafts: the factorized tuner's acceptance shape (fit.py). Acceptance
        is a prefix, so position i was accepted in every step that accepted more than i."""
        pos = self.accepted_per_position
        reached = [self.drafts, *pos, 0]
        return [float(reached[n] - reached[n + 1]) for n in range(len(pos) + 1)]

    def to_dict(self) -> dict[str, Any]:
        return {
            "concurrency": self.concurrency,
            REQUEST_THROUGHPUT: self.request_throughput,
            OUTPUT_THROUGHPUT: self.output_token_throughput,
            **latency_fields("ttft", self.ttft_ms),
            **latency_fields("tpot", self.tpot_ms),
            **latency_fields("itl", self.itl_ms),
            "drafts": self.drafts,
            "draft_tokens": self.draft_tokens,
            "accepted": self.accepted,
            "accepted_per_position": self.accepted_per_position,
            "acceptance_length": round(self.acceptance_length, 4),
            "histogram": self.histogram(),
            "repeat": self.repeat,
            "cpu_s": self.cpu_s,
            "tokens_per_cpu_s": self.tokens_per_cpu_s,
        }


@dataclass
class Result:
    vllm_version: str
    start_s: float
    points: list[Point]

    def at(self, concurrency: int, repeat: int = 0) -> Point:
        return next(p for p in self.points if p.concurrency == concurrency and p.repeat == repeat)


def measure(
    python: Path, job: Job, log: Path, timeout_s: float = START_TIMEOUT_S, env_extra: dict[str, str] | None = None
) -> Result:
    """Start vLLM (with `python`, vLLM's interpreter) for `job`; StepFailed with the log's tail if it fails.
    `env_extra`: more of vLLM's environment variables (a benchmark comparing compilation modes)."""
    from specdeploy.engines.vllm.env import COMPILE_ENV, child_env
    from specdeploy.execute.process import run_process

    with tempfile.TemporaryDirectory(prefix="specdeploy-vllm-") as tmp:
        work = Path(tmp)
        (work / "job.json").write_text(json.dumps(job.to_dict()), encoding="utf-8")
        env = child_env(
            {"HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": str(KV_CACHE_GIB), **COMPILE_ENV, **(env_extra or {})}
        )
        run_process(
            [str(python), str(SCRIPTS / "llm_run.py"), "job.json", "out.json"],
            log_path=log,
            env=env,
            cwd=work,
            timeout=timeout_s,
            step_id="vllm measure",
        )
        raw = json.loads((work / "out.json").read_text(encoding="utf-8"))
    return Result(raw["vllm_version"], float(raw["start_s"]), [_point(r, job.max_tokens) for r in raw["runs"]])


def _point(run: dict[str, Any], max_tokens: int) -> Point:
    tokens = sum(len(t) for t in run["token_ids"])
    wall = float(run["wall_s"]) or 1e-9
    ms = [1e3 * v for v in run["ttft_s"]], [1e3 * v for v in run["tpot_s"]]
    if tokens != max_tokens * int(run["requests"]):
        raise StepFailed(f"vLLM answered {tokens} tokens where {max_tokens} x {run['requests']} were asked")
    return Point(
        int(run["concurrency"]),
        tokens / wall,
        int(run["requests"]) / wall,
        distribution(ms[0]),
        distribution(ms[1]),
        itl_summary(run["itl"]),
        int(run["drafts"]),
        int(run["draft_tokens"]),
        int(run["accepted"]),
        [int(v) for v in run["per_position"]],
        run["token_ids"],
        int(run.get("repeat", 0)),
        {str(n): float(t) for n, t in run.get("cpu_s", {}).items()},
    )


def itl_summary(hist: dict[str, Any]) -> dict[str, float]:
    """Mean (exact: sum / count) and p50/p90/p99 as the upper bound of the Prometheus bucket (cumulative `le`
    counts) the quantile falls in, in milliseconds."""
    count = int(hist["count"])
    if not count:
        return {"mean": 0.0, "p50": 0.0, "p90": 0.0, "p99": 0.0}
    bounds = sorted((float(le), int(n)) for le, n in hist["buckets"].items())

    def quantile(q: float) -> float:
        return next((1e3 * le for le, n in bounds if n >= q * count), 1e3 * bounds[-1][0])

    return {"mean": 1e3 * float(hist["sum"]) / count, "p50": quantile(0.5), "p90": quantile(0.9), "p99": quantile(0.99)}
