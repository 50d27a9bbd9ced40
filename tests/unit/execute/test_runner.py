"""The executor on real subprocess steps: cache hits, rebuild reasons, failures, kill -9, locks, needs."""

from __future__ import annotations

import json
import os
import re
import signal
import threading
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock

from specdeploy.api import load_and_resolve
from specdeploy.errors import MissingDependency
from specdeploy.execute.artifact import BuildLocked
from specdeploy.execute.build import run_build
from specdeploy.execute.needs import check_needs
from specdeploy.plan.model import Stage, Step
from tests.unit.execute.conftest import WRITE, no_needs, plan_of, run_driver, script_step, wait_for


def _status(result: Any) -> dict[str, str]:
    return {s.id: s.status for s in result.steps}


def test_built_then_reused_then_rebuilt_with_reason(tmp_path: Path, resolved: Any) -> None:
    a = script_step("engine.a", WRITE.format(text="A"))
    b = script_step(
        "engine.b",
        "import sys, pathlib; pathlib.Path(sys.argv[1], 'b').write_text(sys.argv[2])",
        depends_on=("engine.a",),
    )
    b = Step(b.id, b.stage, b.description, depends_on=b.depends_on, argv=(*b.argv, "${engine.a.dir}"), params=b.params)
    out = tmp_path / "out"
    first = run_build(plan_of(a, b), resolved, out, needs=no_needs)
    assert _status(first) == {"engine.a": "built", "engine.b": "built"}
    a_dir = out / "tiny" / first.steps[0].outputs["dir"]
    assert (a_dir / "out.txt").read_text() == "A" and a_dir.name.startswith("engine.a-")
    assert _status(run_build(plan_of(a, b), resolved, out, needs=no_needs)) == {
        "engine.a": "reused",
        "engine.b": "reused",
    }
    a2 = script_step("engine.a", WRITE.format(text="A2"))
    third = run_build(plan_of(a2, b), resolved, out, needs=no_needs)
    assert _status(third) == {"engine.a": "rebuilt", "engine.b": "rebuilt"}
    assert third.steps[0].reason == "step definition changed"
    assert third.steps[1].reason == "output of engine.a changed"
    assert re.search(r"rebuilt in \d+\.\d s \(reason: output of engine.a changed\)", third.steps[1].line())


def test_a_long_step_announces_its_start_and_says_how_long_it_took(tmp_path: Path, resolved: Any) -> None:
    slow = script_step("engine.a", "import time; time.sleep(0.3)")
    quick = script_step("emit.b", WRITE.format(text="B"), stage=Stage.EMIT)
    lines: list[str] = []
    run_build(plan_of(slow, quick), resolved, tmp_path, needs=no_needs, report=lines.append)
    assert lines[0].startswith("engine.a             started: test step engine.a (log ")
    assert re.fullmatch(r"engine.a             built in 0\.[3-9] s", lines[1]), lines
    assert re.fullmatch(r"emit.b               built in \d+\.\d s", lines[2]), lines  # emit: no start line
    assert len(lines) == 3


def test_a_running_child_reports_its_elapsed_time(tmp_path: Path, resolved: Any, monkeypatch: Any) -> None:
    from specdeploy.execute import process

    monkeypatch.setattr(process, "HEARTBEAT_S", 0.2)
    lines: list[str] = []
    run_build(
        plan_of(script_step("engine.a", "import time; time.sleep(0.7)")),
        resolved,
        tmp_path,
        needs=no_needs,
        report=lines.append,
    )
    elapsed = [float(m.group(1)) for line in lines if (m := re.search(r"still running \(([0-9.]+) s\)", line))]
    # a loaded machine only adds beats: the child sleeps 0.7 s, so at least two come, one per interval
    assert len(elapsed) >= 2 and elapsed[0] >= 0.2, lines
    assert all(later - earlier >= 0.15 for earlier, later in zip(elapsed, elapsed[1:])), lines


def test_profile_change_names_the_key(tmp_path: Path, resolved: Any) -> None:
    step = script_step("engine.a", WRITE.format(text="A"))
    run_build(plan_of(step), resolved, tmp_path, needs=no_needs)
    changed = load_and_resolve(resolved.loaded.file, ("serving.max_batch_size=16",))
    result = run_build(plan_of(step), changed, tmp_path, needs=no_needs)
    assert result.steps[0].reason == "profile serving.max_batch_size changed"


def test_damaged_output_is_rebuilt(tmp_path: Path, resolved: Any) -> None:
    step = script_step("engine.a", WRITE.format(text="A"))
    first = run_build(plan_of(step), resolved, tmp_path, needs=no_needs)
    (tmp_path / "tiny" / first.steps[0].outputs["dir"] / "out.txt").write_text("tampered!")
    again = run_build(plan_of(step), resolved, tmp_path, needs=no_needs)
    assert again.steps[0].status == "rebuilt" and "out.txt" in again.steps[0].reason


def test_failure_skips_dependents_and_keep_going(tmp_path: Path, resolved: Any) -> None:
    bad = script_step("engine.bad", "import sys; print('boom at the end'); sys.exit(4)")
    child = script_step("emit.child", WRITE.format(text="c"), depends_on=("engine.bad",), stage=Stage.EMIT)
    other = script_step("engine.other", WRITE.format(text="o"))
    result = run_build(plan_of(bad, child, other), resolved, tmp_path, needs=no_needs)
    steps = {s.id: s for s in result.steps}
    assert steps["engine.bad"].status == "failed" and "boom at the end" in steps["engine.bad"].reason
    assert steps["emit.child"].status == "skipped" and steps["emit.child"].reason.startswith(
        "dependency engine.bad failed"
    )
    assert steps["engine.other"].status == "skipped" and "--keep-going" in steps["engine.other"].reason
    assert not (tmp_path / "tiny" / ".specdeploy" / "steps" / "engine.bad.json").exists()
    kept = run_build(plan_of(bad, child, other), resolved, tmp_path, keep_going=True, needs=no_needs)
    assert _status(kept) == {"engine.bad": "failed", "emit.child": "skipped", "engine.other": "built"}
    assert not kept.ok


def test_only_and_from(tmp_path: Path, resolved: Any) -> None:
    a = script_step("engine.a", WRITE.format(text="A"))
    e = script_step("emit.e", WRITE.format(text="E"), depends_on=("engine.a",), stage=Stage.EMIT)
    assert _status(run_build(plan_of(a, e), resolved, tmp_path, only=("engine.a",), needs=no_needs)) == {
        "engine.a": "built",
        "emit.e": "not-selected",
    }
    assert _status(run_build(plan_of(a, e), resolved, tmp_path, start="emit", needs=no_needs)) == {
        "engine.a": "not-selected",
        "emit.e": "built",
    }


def test_missing_trtllm_message(tmp_path: Path, resolved: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("specdeploy.execute.needs.installed_trtllm", lambda: None)
    step = script_step("engine.target", WRITE.format(text="x"), needs=("tensorrt_llm", "gpu"))
    emit = script_step("emit.engine", WRITE.format(text="y"), depends_on=("engine.target",), stage=Stage.EMIT)
    with pytest.raises(MissingDependency) as err:
        check_needs(step, resolved)
    assert "pip install tensorrt_llm==1.2.1 --extra-index-url https://pypi.nvidia.com" in str(err.value)
    result = run_build(plan_of(step, emit), resolved, tmp_path)
    assert _status(result) == {"engine.target": "failed", "emit.engine": "skipped"}
    assert "needs TensorRT-LLM 1.2.1, which is not installed" in result.steps[0].reason


def test_missing_action_module_fails_clearly(tmp_path: Path, resolved: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(
        __import__("specdeploy.execute.actions", fromlist=["ACTIONS"]).ACTIONS,
        "ghost",
        "specdeploy.not_written_yet.actions:ghost",
    )
    step = Step("tune.x", Stage.TUNE, "ghost", action="ghost")
    result = run_build(plan_of(step), resolved, tmp_path, needs=no_needs)
    assert result.steps[0].status == "failed"
    assert "specdeploy.not_written_yet.actions, which is not part of this specdeploy" in result.steps[0].reason


SLOW = """
import sys, time, pathlib
out = pathlib.Path(sys.argv[1])
(out / 'big.bin').write_bytes(b'half')
if pathlib.Path(sys.argv[2]).exists():
    pathlib.Path(sys.argv[3]).write_text('started')
    time.sleep(60)
(out / 'big.bin').write_bytes(b'complete')
"""


def test_kill_9_mid_step_then_resume(tmp_path: Path, resolved: Any) -> None:
    slow, started = tmp_path / "slow", tmp_path / "started"
    slow.touch()
    step = script_step("engine.big", SLOW)
    step = Step(step.id, step.stage, step.description, argv=(*step.argv, str(slow), str(started)), params=step.params)
    proc = run_driver(tmp_path, resolved, plan_of(step))
    wait_for(started, proc)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    art = tmp_path / "out" / "tiny"
    assert not (art / ".specdeploy" / "steps" / "engine.big.json").exists()
    assert not list(art.glob("engines/*/big.bin")), "a half-written output reached the artifact folder"
    slow.unlink()
    result = run_build(plan_of(step), resolved, tmp_path / "out", needs=no_needs)
    assert result.steps[0].status == "built"
    assert (art / result.steps[0].outputs["dir"] / "big.bin").read_bytes() == b"complete"
    assert not any((art / ".specdeploy" / "tmp").iterdir())


def test_second_build_fails_after_lock_timeout(tmp_path: Path, resolved: Any) -> None:
    slow, started = tmp_path / "slow", tmp_path / "started"
    slow.touch()
    step = script_step("engine.big", SLOW)
    step = Step(step.id, step.stage, step.description, argv=(*step.argv, str(slow), str(started)), params=step.params)
    proc = run_driver(tmp_path, resolved, plan_of(step))
    try:
        wait_for(started, proc)
        messages: list[str] = []
        with pytest.raises(BuildLocked) as err:
            run_build(
                plan_of(step), resolved, tmp_path / "out", needs=no_needs, lock_timeout=0.3, report=messages.append
            )
        assert "still holds" in str(err.value) and "waiting for another build of tiny" in messages[0]
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_second_build_waits_for_the_lock(tmp_path: Path, resolved: Any) -> None:
    step = script_step("engine.a", WRITE.format(text="A"))
    lock_path = tmp_path / "tiny" / ".specdeploy" / "build.lock"
    lock_path.parent.mkdir(parents=True)
    holder = FileLock(str(lock_path), thread_local=False)
    holder.acquire()
    threading.Timer(0.5, holder.release).start()
    messages: list[str] = []
    result = run_build(plan_of(step), resolved, tmp_path, needs=no_needs, lock_timeout=30, report=messages.append)
    assert result.ok and messages[0].startswith("waiting for another build of tiny")


def test_stamp_records_key_and_components(tmp_path: Path, resolved: Any) -> None:
    step = script_step("engine.a", WRITE.format(text="A"))
    result = run_build(plan_of(step), resolved, tmp_path, needs=no_needs)
    stamp = json.loads((tmp_path / "tiny" / ".specdeploy" / "steps" / "engine.a.json").read_text())
    assert stamp["key"] == result.steps[0].key
    assert {"step definition", "code", "profile", "GPU arch", "TensorRT-LLM version"} <= set(stamp["components"])
    assert result.steps[0].outputs["dir"] == f"engines/engine.a-{stamp['key'][:12]}"
