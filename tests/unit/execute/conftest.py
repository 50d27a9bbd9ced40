"""A tiny resolved profile (local Llama-3.1-8B config) and plans of real subprocess steps."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from specdeploy.api import load_and_resolve
from specdeploy.plan.model import Plan, Stage, Step
from specdeploy.resolve.resolved import Resolved
from tests.helpers import LLAMA_31_8B_CONFIG, local_model, write_profile


@pytest.fixture
def resolved(tmp_path: Path) -> Resolved:
    model = local_model(tmp_path / "llama", LLAMA_31_8B_CONFIG)
    profile = write_profile(tmp_path / "tiny.yaml", {
        "target": {"model": str(model)}, "hardware": {"gpu": "h200"},
        "speculative": {"mechanism": "ngram", "draft_len": 3}, "serving": {"max_batch_size": 8}})
    return load_and_resolve(str(profile))


def script_step(step_id: str, code: str, *, depends_on: tuple[str, ...] = (), stage: Stage = Stage.ENGINE,
                **kw: Any) -> Step:
    """A step whose argv runs `python -c code` with argv[1] = its output folder."""
    return Step(step_id, stage, f"test step {step_id}", depends_on=depends_on,
                argv=(sys.executable, "-c", code, "${out}"), params={"out": "engines"}, **kw)


def plan_of(*steps: Step) -> Plan:
    return Plan("tiny", tuple(steps), {})


WRITE = "import sys, pathlib; pathlib.Path(sys.argv[1], 'out.txt').write_text('{text}')"
