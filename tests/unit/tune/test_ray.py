"""Tune points on a local Ray with 8 declared (fake) GPUs: no shared GPU, TP x PP reserved, parallel wall time,
the same result as a serial tune, and a killed tune or worker leaves a checkpoint that resumes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from specdeploy.api import load_and_resolve
from specdeploy.tune.parallel import RayPool
from specdeploy.tune.run import CHECKPOINT, make_backend, tune_resolved
from specdeploy.tune.setup import setup_from
from specdeploy.tune.types import Request
from tests.unit.tune.ray_double import RecordingDouble, intervals

ray = pytest.importorskip("ray", reason="the ray extra")
ROOT = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.usefixtures("cluster")
SETS = ("tune.concurrency=[1,4]", "tune.draft_lens=[1,2,3]", "tune.repeats=1")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = os.pathsep.join([str(ROOT), str(ROOT / "plugins"), os.environ.get("PYTHONPATH", "")])
    ray.init(
        num_cpus=16,
        num_gpus=8,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": path, "HF_HUB_OFFLINE": "1"}},
    )
    warm = tmp_path_factory.mktemp("warm")  # start the 8 GPU workers once: on 2 busy cores that takes seconds
    for _ in range(2):
        list(RayPool(_double(warm, 0.5), gpus=1).run(_points(8)))
    yield ray
    ray.shutdown()


def _double(tmp_path: Path, seconds: float, **kw: Any) -> RecordingDouble:
    resolved = load_and_resolve("h200-eagle3", SETS)  # the model backend a serial tune of it uses
    model, _ = make_backend("model", resolved, setup_from(resolved), tmp_path)
    return RecordingDouble(model, tmp_path / "points.jsonl", seconds, **kw)


def _overlap(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a["start"] < b["end"] and b["start"] < a["end"]


def _most_at_once(seen: list[dict[str, Any]]) -> int:
    """The most points running at one instant (checked at every start)."""
    return max(sum(p["start"] <= q["start"] < p["end"] for p in seen) for q in seen)


def _points(n: int) -> list[tuple[Request, ...]]:
    return [(Request("cost", 1, k),) for k in range(n)]


def test_points_never_share_a_gpu_and_run_side_by_side(tmp_path: Path) -> None:
    double = _double(tmp_path, 3.0)
    done = list(RayPool(double, gpus=1).run(_points(8)))
    assert len(done) == 8 and all(isinstance(v, dict) for _, values in done for v in values)
    seen = intervals(double.log)
    assert all(len(p["gpus"]) == 1 for p in seen)
    for a in seen:
        for b in seen:
            if a is not b and _overlap(a, b):
                assert set(a["gpus"]).isdisjoint(b["gpus"]), (a, b)
    most = _most_at_once(seen)
    assert most >= 6, f"only {most} points ran at once"  # how long they took is bench/ray_points.py's question


def test_a_tp2_point_waits_for_two_free_gpus(tmp_path: Path) -> None:
    double = _double(tmp_path, 3.0)
    list(RayPool(double, gpus=2).run(_points(5)))
    seen = sorted(intervals(double.log), key=lambda p: p["start"])
    assert all(len(p["gpus"]) == 2 for p in seen)
    assert _most_at_once(seen) <= 4  # 8 GPUs hold four TP = 2 points
    for a in seen:
        for b in seen:
            if a is not b and _overlap(a, b):
                assert set(a["gpus"]).isdisjoint(b["gpus"])
    assert seen[4]["start"] >= min(p["end"] for p in seen[:4]) - 0.05


def test_parallel_caps_the_points_in_flight(tmp_path: Path) -> None:
    double = _double(tmp_path, 1.0)
    list(RayPool(double, gpus=1, parallel=2).run(_points(4)))
    seen = intervals(double.log)
    assert _most_at_once(seen) <= 2


def _contents(artifact: Path) -> set[str]:
    lines = (artifact / CHECKPOINT).read_text().splitlines()[1:]
    return {
        json.dumps({k: v for k, v in json.loads(line).items() if k not in ("at", "attempt")}, sort_keys=True)
        for line in lines
    }


def test_a_ray_tune_equals_the_serial_tune_and_survives_a_dead_worker(tmp_path: Path) -> None:
    resolved = load_and_resolve("h200-eagle3", SETS)
    serial = tune_resolved(resolved, tmp_path / "serial", backend="model", report=False)
    double = _double(tmp_path, 0.0, die_once_on="cost/c1/k2/r0")
    parallel = tune_resolved(resolved, tmp_path / "ray", backend="model", report=False, measure=double, ray=True)
    for key in ("schedule", "decisions", "failures"):
        assert getattr(parallel, key) == getattr(serial, key), key
    lines = [json.loads(line) for line in (tmp_path / "ray" / CHECKPOINT).read_text().splitlines()[1:]]
    died = [line for line in lines if not line["ok"]]  # the whole point (one server, K = 2) died with its worker
    assert "cost/c1/k2/r0" in {d["key"] for d in died} and {d["request"]["k"] for d in died} == {2}
    assert all("Error" in d["error"] and d["attempt"] == 1 for d in died)
    assert _contents(tmp_path / "serial") == {c for c in _contents(tmp_path / "ray") if '"ok": true' in c}


def test_a_killed_distributed_tune_resumes_from_its_checkpoint(tmp_path: Path) -> None:
    artifact = tmp_path / "killed"
    address = ray.get_runtime_context().gcs_address  # this test's cluster, never another one on the machine
    script = f"""
import sys
from pathlib import Path
from specdeploy.api import load_and_resolve
from specdeploy.tune.run import tune_resolved
from tests.unit.tune.test_ray import SETS, _double
resolved = load_and_resolve("h200-eagle3", SETS)
tune_resolved(resolved, Path({str(artifact)!r}), backend="model", report=False, ray_address={address!r},
              measure=_double(Path({str(tmp_path)!r}), 1.0))
"""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "plugins"), os.environ.get("PYTHONPATH", "")]),
    }
    child = subprocess.Popen([sys.executable, "-c", script], env=env, start_new_session=True)
    checkpoint = artifact / CHECKPOINT
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and child.poll() is None:
        if checkpoint.exists() and len(checkpoint.read_text().splitlines()) >= 4:
            break
        time.sleep(0.2)
    os.killpg(child.pid, signal.SIGKILL)
    child.wait()
    kept = len(checkpoint.read_text().splitlines()) - 1
    assert kept >= 3
    resolved = load_and_resolve("h200-eagle3", SETS)
    resumed = tune_resolved(resolved, artifact, backend="model", report=False, ray=True)
    serial = tune_resolved(resolved, tmp_path / "serial", backend="model", report=False)
    assert resumed.schedule == serial.schedule
    assert resumed.cost["replayed"] >= kept


def test_the_reference_runtime_runs_its_points_through_ray_on_cpus(tmp_path: Path) -> None:
    """The whole path for real on a CPU machine: tiny random models, real speculative decoding in the workers."""
    pytest.importorskip("torch", reason="the reference runtime: the reference extra")
    from specdeploy.engines.reference.runtime.models import ModelPair
    from specdeploy.engines.reference.tune import ReferenceBackend
    from specdeploy.perfmodel import ConstantTimer
    from specdeploy.tune.checkpoint import Checkpoint, Recorder
    from specdeploy.tune.engine import drive, finish
    from specdeploy.tune.setup import TuneSetup
    from specdeploy.tune.strategies import STRATEGIES
    from tests.unit.runtime.tiny import noisy_copy, random_prompts, tiny_llama

    target = tiny_llama(0)
    prompts = [("coding" if i % 2 else "writing", p) for i, p in enumerate(random_prompts(4, 96, seed=2))]
    setup = TuneSetup("tiny", "draft_target", True, (1, 2), (1, 2, 3), repeats=1, prompts=4, output_len=6)
    backend = ReferenceBackend(None, setup, pair=ModelPair(target, noisy_copy(target, 1, 0.05)), prompts=prompts)
    prior = lambda plain: (ConstantTimer(min(plain.values()), 0.3), None)  # noqa: E731
    logs = {}
    for name, pool in (("serial", None), ("ray", RayPool(backend, gpus=0, parallel=2))):
        strategy = STRATEGIES["factorized"](setup, prior)
        recorder = Recorder(backend, Checkpoint(tmp_path / f"{name}.jsonl", "h"), pool=pool)
        drive(strategy, recorder)
        assert set(finish(strategy, recorder, replay=False).decisions) == {1, 2}
        logs[name] = {m.request.key: m.values for m in recorder.log}
    acceptance = [key for key in logs["serial"] if key.startswith("acceptance")]
    assert acceptance and all(logs["ray"][key]["hist"] == logs["serial"][key]["hist"] for key in acceptance)
