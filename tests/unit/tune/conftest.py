"""Shared pieces: the recorded JSONL fixture as a measure function, and a small setup matching it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from specdeploy.tune.result import v1_renamed
from specdeploy.tune.setup import TuneSetup
from specdeploy.tune.types import Request

RECORDED = Path(__file__).parents[2] / "fixtures" / "tune" / "recorded_model_h200_eagle3.jsonl"


class Replay:
    """A measure() that answers only from the recording (a strategy asking for anything else fails); recorded as
    specdeploy.tune/1, it is read as a /2 reader reads a /1 result."""

    def __init__(self) -> None:
        self.rows = {(r := json.loads(line))["key"]: r for line in RECORDED.read_text().splitlines()}
        self.calls: list[Request] = []

    def __call__(self, req: Request) -> dict[str, Any]:
        self.calls.append(req)
        row = self.rows[req.key]
        return {**v1_renamed(row["values"]), "cost_s": row["cost_s"]}


@pytest.fixture
def replay() -> Replay:
    return Replay()


@pytest.fixture
def setup() -> TuneSetup:
    return TuneSetup(
        "h200-eagle3",
        "eagle3",
        True,
        (1, 4, 16, 64),
        tuple(range(1, 7)),
        repeats=3,
        trtllm_version="1.2.1",
        line="1.2",
        max_batch_size=64,
    )


@pytest.fixture
def prior() -> Any:
    from specdeploy.api import load_and_resolve
    from specdeploy.tune.prior import calibrated_prior

    return calibrated_prior(load_and_resolve("h200-eagle3"))
