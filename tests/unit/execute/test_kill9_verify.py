"""kill -9 of a build at every step, then `verify`: it never passes a half-written artifact (it passes only when
every file is still the last complete build's), and the resumed build verifies."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest

from specdeploy.execute.build import run_build
from specdeploy.execute.verify import verify
from specdeploy.plan.model import Step
from tests.unit.execute.conftest import no_needs, plan_of, run_driver, script_step, wait_for

STEP = """
import sys, time, pathlib
out = pathlib.Path(sys.argv[1])
(out / 'data.txt').write_text('half')
if pathlib.Path(sys.argv[2]).exists():
    pathlib.Path(sys.argv[3]).write_text('started')
    time.sleep(60)
(out / 'data.txt').write_text('{version} complete')
"""
IDS = ("engine.a", "engine.b", "engine.c")


def _plan(tmp_path: Path, version: str, gate: str | None) -> Any:
    steps, previous = [], ()
    for step_id in IDS:
        step = script_step(step_id, STEP.format(version=version), depends_on=previous)
        gate_file = tmp_path / (f"gate-{step_id}" if step_id == gate else "no-gate")
        steps.append(
            Step(
                step.id,
                step.stage,
                step.description,
                argv=(*step.argv, str(gate_file), str(tmp_path / f"started-{step_id}")),
                params=step.params,
                depends_on=step.depends_on,
            )
        )
        previous = (step_id,)
    return plan_of(*steps)


@pytest.mark.parametrize("killed_at", IDS)
def test_kill_9_at_each_step_then_verify(tmp_path: Path, resolved: Any, killed_at: str) -> None:
    out, art = tmp_path / "out", tmp_path / "out" / "tiny"
    assert run_build(_plan(tmp_path, "v1", None), resolved, out, needs=no_needs).ok
    final = verify(art)
    assert final.ok, final
    (tmp_path / f"gate-{killed_at}").touch()
    proc = run_driver(tmp_path, resolved, _plan(tmp_path, "v2", killed_at))
    wait_for(tmp_path / f"started-{killed_at}", proc)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    outputs = [p for p in art.rglob("data.txt") if ".specdeploy" not in p.parts]
    assert all(p.read_text() != "half" for p in outputs), "a half-written output reached the artifact folder"
    report = verify(art)
    if report.ok:  # nothing of the killed build was swapped in: the last complete build is intact
        assert all(p.read_text() == "v1 complete" for p in outputs)
    else:  # steps before the kill were swapped in: the manifest (v1) no longer describes the folder
        assert report.drift and killed_at != IDS[0]
    (tmp_path / f"gate-{killed_at}").unlink()
    assert run_build(_plan(tmp_path, "v2", None), resolved, out, needs=no_needs).ok
    final = verify(art)
    assert final.ok, final
