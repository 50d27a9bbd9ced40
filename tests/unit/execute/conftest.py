"""A tiny resolved profile (local Llama-3.1-8B config) and plans of real subprocess steps."""

from __future__ import annotations

import os
import subprocess
import sys
import time
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
    profile = write_profile(
        tmp_path / "tiny.yaml",
        {
            "target": {"model": str(model)},
            "hardware": {"gpu": "h200"},
            "speculative": {"mechanism": "ngram", "draft_len": 3},
            "serving": {"max_batch_size": 8},
        },
    )
    return load_and_resolve(str(profile))


def script_step(
    step_id: str, code: str, *, depends_on: tuple[str, ...] = (), stage: Stage = Stage.ENGINE, **kw: Any
) -> Step:
    """A step whose argv runs `python -c code` with argv[1] = its output folder."""
    return Step(
        step_id,
        stage,
        f"test step {step_id}",
        depends_on=depends_on,
        argv=(sys.executable, "-c", code, "${out}"),
        params={"out": "engines"},
        **kw,
    )


def plan_of(*steps: Step) -> Plan:
    return Plan("tiny", tuple(steps), {})


WRITE = "import sys, pathlib; pathlib.Path(sys.argv[1], 'out.txt').write_text('{text}')"


def no_needs(_step: Step, _resolved: Any) -> None:
    """A needs check that finds nothing missing (the steps are plain Python)."""
    return None


DRIVER = """
import sys, pickle
from pathlib import Path
sys.path.insert(0, {root!r})
from specdeploy.api import load_and_resolve
from specdeploy.execute.build import run_build
from tests.unit.execute.conftest import plan_of
plan = pickle.loads(Path({plan!r}).read_bytes())
run_build(plan, load_and_resolve({profile!r}), Path({out!r}), needs=lambda s, r: None, lock_timeout={timeout})
"""


def run_driver(tmp_path: Path, resolved: Any, plan: Any, timeout: float | None = None) -> subprocess.Popen[bytes]:
    """`run_build(plan)` in a process of its own (a session leader, so a test can kill -9 it)."""
    import pickle

    (tmp_path / "plan.pkl").write_bytes(pickle.dumps(plan))
    code = DRIVER.format(
        root=str(Path(__file__).resolve().parents[3]),
        plan=str(tmp_path / "plan.pkl"),
        profile=resolved.loaded.file,
        out=str(tmp_path / "out"),
        timeout=timeout,
    )
    return subprocess.Popen(
        [sys.executable, "-c", code], start_new_session=True, env=dict(os.environ), stderr=subprocess.PIPE
    )


def wait_for(path: Path, proc: subprocess.Popen[bytes]) -> None:
    """Until `path` exists (a step wrote its start mark), failing if the driver exits or a minute passes."""
    deadline = time.monotonic() + 60
    while not path.exists():
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else "driver exited"
        assert time.monotonic() < deadline, "step never started"
        time.sleep(0.05)
