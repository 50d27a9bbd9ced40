"""`specdeploy tune` end to end through `main` (tests.helpers.cli), on the model backend (no GPU): result JSON,
report, lock, bad input (exit 1 / 2); Ctrl-C (a real SIGINT, to a subprocess) with an intact, resumable checkpoint."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from specdeploy.errors import UsageError
from specdeploy.execute.context import ActionContext
from tests.helpers import cli

CHECKPOINT = Path(".specdeploy/tune/tune.draft_len.jsonl")


def test_tune_model_backend_writes_result_report_and_lock(tmp_path: Path) -> None:
    proc = cli("--json", "tune", "h100-draft-target", "--backend", "model", "--out", str(tmp_path))
    assert proc.code == 0, proc.err
    out = json.loads(proc.out)
    art = tmp_path / "h100-draft-target"
    result = json.loads((art / "tune" / "result.json").read_text())
    assert result["format"] == "specdeploy.tune/2" and result["backend"] == "model"
    assert result["measurements"] and all(m["ok"] for m in result["measurements"])
    progress = [line for line in proc.err.splitlines() if " c=" in line]  # no terminal: a line per measurement
    assert len(progress) == len(result["measurements"]) and any("tokens/s" in line for line in progress)
    assert [d["concurrency"] for d in result["decisions"]] == [1, 2, 4, 8, 16, 32]
    emitted = result["schedule"]["emitted"]
    assert emitted["line"] == "1.2" and emitted["draft_len_schedule"]["1"] == result["schedule"]["draft_len"]
    for name in ("report.html", "acceptance.png", "cost.png", "k_star.png", "throughput.png", "pareto.png"):
        assert (art / "tune" / name).stat().st_size > 0
    assert "specdeploy tune" in (art / "tune" / "report.html").read_text()
    lock = json.loads((art / "specdeploy.lock").read_text())["tuned"]
    assert lock["schedule"] == out["schedule"]["schedule"] and lock["result"] == "tune/result.json"
    again = json.loads(cli("--json", "tune", "h100-draft-target", "--backend", "model", "--out", str(tmp_path)).out)
    assert again["cost"]["new_measurements"] == 0 and again["cost"]["replayed"] == result["cost"]["measurements"]


def test_unreachable_sla_exits_1_with_speculation_off_and_the_closest_point(tmp_path: Path) -> None:
    proc = cli(
        "tune",
        "h200-eagle3",
        "--backend",
        "model",
        "--out",
        str(tmp_path),
        "--set",
        "tune.objective=goodput",
        "--set",
        "tune.sla.p99_itl_ms=0.01",
    )
    assert proc.code == 1
    assert "unreachable" in proc.err and "closest: concurrency" in proc.err
    result = json.loads((tmp_path / "h200-eagle3" / "tune" / "result.json").read_text())
    assert result["schedule"]["speculation"] is False and result["sla"]["reachable"] is False


@pytest.mark.parametrize(
    ("sets", "message"),
    [
        (("speculative.draft_len=4",), "beyond the engine's max_draft_len 4"),
        (("tune.dataset=EMPTY",), "missing field(s) question_id, category"),
    ],
)
def test_bad_input_exits_2(tmp_path: Path, sets: tuple[str, ...], message: str) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text('{"prompt": ""}\n{"turns": []}\n')
    args = [a for s in sets for a in ("--set", s.replace("EMPTY", str(empty)))]
    proc = cli("tune", "h200-eagle3", "--backend", "model", "--out", str(tmp_path), *args)
    assert proc.code == 2 and message in proc.err


def test_ctrl_c_leaves_a_resumable_checkpoint(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "specdeploy", "tune", "h200-eagle3", "--backend", "model", "--out", str(tmp_path)]
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "SPECDEPLOY_TUNE_MODEL_PACE_S": "0.05"},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # as a terminal's Ctrl-C
    ck = tmp_path / "h200-eagle3" / CHECKPOINT
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not ck.exists() or len(ck.read_text().splitlines()) < 6):
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and ("interrupted" in err or "aborted" in err)
    lines = ck.read_text().splitlines()
    records = [json.loads(line) for line in lines[1:]]  # every line whole: appended and fsynced one by one
    assert len(records) >= 5 and not (tmp_path / "h200-eagle3" / "tune" / "result.json").exists()
    tuned = cli("--json", "tune", "h200-eagle3", "--backend", "model", "--out", str(tmp_path))
    done = json.loads(tuned.out)
    assert done["cost"]["replayed"] == len(records) and done["cost"]["new_measurements"] > 0


def test_build_step_action_returns_what_emit_reads(tmp_path: Path) -> None:
    from specdeploy.api import plan
    from specdeploy.execute.tuned import chosen_schedule
    from specdeploy.tune.actions import tune

    resolved, the_plan = plan("h200-eagle3")
    step = next(s for s in the_plan.steps if s.id == "tune.draft_len")
    step = dataclasses.replace(step, params={"measure": "model"})
    lines: list[str] = []
    ctx = ActionContext(
        resolved, the_plan, step, tmp_path, log=type("L", (), {"write": lambda *_: None})(), report=lines.append
    )
    outputs = tune(ctx)
    assert {"draft_len", "schedule", "ranges", "max_concurrency", "emitted", "result"} <= set(outputs)
    # a tune runs for minutes on real hardware: the user sees every measurement as it lands
    measured = json.loads((tmp_path / "tune" / "result.json").read_text())["measurements"]
    assert "PREDICTS" in lines[0]  # the model backend: the step says its schedule is a prediction
    assert len(lines) == len(measured) + 1 and all(line.startswith("tune.draft_len: ") for line in lines)
    assert any(" e2e c=" in line and "tokens/s" in line for line in lines)
    ctx.outputs["tune.draft_len"] = json.loads(json.dumps(outputs))  # as stored in the stamp
    k, schedule, max_conc = chosen_schedule(ctx)
    assert k == outputs["draft_len"] and max_conc == outputs["max_concurrency"]
    assert (tmp_path / "tune" / "result.json").exists()
    bad = dataclasses.replace(step, params={"measure": "nonsense"})
    with pytest.raises(UsageError):
        tune(ActionContext(resolved, the_plan, bad, tmp_path / "x", log=ctx.log))


def test_a_failed_tune_step_keeps_its_result_outside_the_staging_folder(tmp_path: Path) -> None:
    from specdeploy.api import plan
    from specdeploy.errors import StepFailed
    from specdeploy.tune.actions import tune

    resolved, the_plan = plan("h200-eagle3", ("tune.objective=goodput", "tune.sla.p99_itl_ms=0.01"))
    step = dataclasses.replace(next(s for s in the_plan.steps if s.id == "tune.draft_len"), params={"measure": "model"})
    staging = tmp_path / "staging"
    staging.mkdir()
    ctx = ActionContext(
        resolved, the_plan, step, tmp_path / "art", log=type("L", (), {"write": lambda *_: None})(), out_dir=staging
    )
    with pytest.raises(StepFailed, match="unreachable") as failed:
        tune(ctx)
    kept = tmp_path / "art" / ".specdeploy" / "failed" / "tune.draft_len" / "result.json"
    assert failed.value.hint == f"full result: {kept}"
    assert json.loads(kept.read_text())["sla"]["reachable"] is False


def test_a_checkpoint_from_other_code_is_set_aside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Resuming replays measurements of the same code only: after a code change the tune measures afresh."""
    from specdeploy import api
    from specdeploy.tune import run as tune_run

    resolved = api.load_and_resolve("h100-draft-target")
    first = tune_run.tune_resolved(resolved, tmp_path, backend="model", report=False)
    same = tune_run.tune_resolved(resolved, tmp_path, backend="model", report=False)
    assert same.cost["new_measurements"] == 0 and same.cost["replayed"] == first.cost["measurements"]
    monkeypatch.setattr(tune_run, "code_hash", lambda name: f"changed code of {name}")
    other = tune_run.tune_resolved(resolved, tmp_path, backend="model", report=False)
    assert other.cost["replayed"] == 0 and other.cost["new_measurements"] == first.cost["measurements"]
    assert len(list((tmp_path / CHECKPOINT).parent.glob("*.jsonl"))) == 2  # the old checkpoint is kept aside
