"""Checkpoint: every measurement appended (fsynced), replayed on resume without re-measuring; crashes recorded,
retried once, then reported; a torn last line or another setup's checkpoint never replays wrong data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specdeploy.errors import UsageError
from specdeploy.tune.checkpoint import Checkpoint, Recorder
from specdeploy.tune.engine import drive
from specdeploy.tune.strategies import STRATEGIES
from specdeploy.tune.types import Request


def test_resume_measures_nothing_twice(setup, prior, replay, tmp_path: Path) -> None:
    path = tmp_path / "ck.jsonl"
    first = STRATEGIES["factorized"](setup, prior)
    drive(first, Recorder(replay, Checkpoint(path, "h")))
    n = len(replay.calls)
    assert n > 10
    again = STRATEGIES["factorized"](setup, prior)
    rec = Recorder(replay, Checkpoint(path, "h"))
    drive(again, rec)
    assert len(replay.calls) == n and rec.calls == 0 and rec.replayed == n
    assert {c: d.k for c, d in again.decisions().items()} == {c: d.k for c, d in first.decisions().items()}


def test_interrupted_run_resumes_where_it_stopped(setup, prior, replay, tmp_path: Path) -> None:
    path = tmp_path / "ck.jsonl"

    def interrupt_after_20(req):  # noqa: ANN001, ANN202
        if len(replay.calls) >= 20:
            raise KeyboardInterrupt
        return replay(req)

    with pytest.raises(KeyboardInterrupt):
        drive(STRATEGIES["factorized"](setup, prior), Recorder(interrupt_after_20, Checkpoint(path, "h")))
    with path.open("a") as handle:
        handle.write('{"key": "e2e/c1/k3/r0", "request": {"kind": "e2e"')  # torn by the kill
    rec = Recorder(replay, Checkpoint(path, "h"))
    drive(STRATEGIES["factorized"](setup, prior), rec)
    assert rec.replayed == 20 and rec.calls > 0
    assert len(replay.calls) == 20 + rec.calls  # nothing measured twice


def test_crash_is_recorded_retried_once_then_reported(tmp_path: Path) -> None:
    calls = []

    def crashy(req: Request) -> dict:
        calls.append(req)
        if req.k == 3:
            raise RuntimeError("CUDA error: an illegal memory access")
        return {"output_token_throughput": 1.0, "output_token_throughput_per_user": 1.0, "cost_s": 1.0}

    ck = Checkpoint(tmp_path / "ck.jsonl", "h")
    rec = Recorder(crashy, ck)
    assert rec(Request("e2e", 1, 3)) is None
    assert rec(Request("e2e", 1, 2)) is not None
    assert len(calls) == 3  # the crash once + its retry, then the good one
    assert rec.failures == [
        {
            "key": "e2e/c1/k3/r0",
            "request": Request("e2e", 1, 3).to_dict(),
            "errors": ["RuntimeError: CUDA error: an illegal memory access"] * 2,
        }
    ]
    lines = [json.loads(line) for line in (tmp_path / "ck.jsonl").read_text().splitlines()[1:]]
    assert [(r["key"], r["ok"], r["attempt"]) for r in lines] == [
        ("e2e/c1/k3/r0", False, 1),
        ("e2e/c1/k3/r0", False, 2),
        ("e2e/c1/k2/r0", True, 1),
    ]


def test_other_setup_starts_over_and_keeps_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "ck.jsonl"
    Recorder(lambda _: {"cost_s": 1.0}, Checkpoint(path, "aaa"))(Request("cost"))
    assert Checkpoint(path, "aaa").records
    ck = Checkpoint(path, "bbb")
    assert ck.records == {}
    assert list(tmp_path.glob("ck.aaa*.jsonl"))


def test_not_a_checkpoint_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "ck.jsonl").write_text("hello\n")
    with pytest.raises(UsageError):
        Checkpoint(tmp_path / "ck.jsonl", "h")
