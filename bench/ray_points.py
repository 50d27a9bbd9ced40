"""Distributed tune points (issue 19): 8 measurement points of 3 s each (the recording double of
tests/unit/tune/ray_double.py: the performance model's answer after a 3 s sleep, like a device) run through
`specdeploy.tune.parallel.RayPool` on a local Ray with 8 declared GPUs, then on one with 1 declared GPU.

Each cluster is warmed up first (its GPU workers started: on this project's 2 shared cores a cold start costs
seconds per worker), then timed. `span` is first point start to last point end; `wall` adds Ray's scheduling.

    .venv/bin/python bench/ray_points.py   # -> bench/results/ray.json
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(Path(__file__).resolve().parent), str(ROOT), str(ROOT / "plugins")]
from _common import write_result  # noqa: E402

from specdeploy.tune.parallel import RayPool  # noqa: E402
from tests.unit.tune.ray_double import intervals  # noqa: E402
from tests.unit.tune.test_ray import _double, _points  # noqa: E402

POINT_S = 3.0


def timed(gpus: int) -> dict[str, float]:
    import ray

    path = os.pathsep.join([str(ROOT), str(ROOT / "plugins"), os.environ.get("PYTHONPATH", "")])
    ray.init(
        num_cpus=16,
        num_gpus=gpus,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": path, "HF_HUB_OFFLINE": "1"}},
    )
    try:
        folder = Path(tempfile.mkdtemp())
        (folder / "warm").mkdir()
        for _ in range(2):
            list(RayPool(_double(folder / "warm", 0.5), gpus=1).run(_points(gpus)))
        double = _double(folder, POINT_S)
        start = time.monotonic()
        list(RayPool(double, gpus=1).run(_points(8)))
        wall = time.monotonic() - start
        seen = intervals(double.log)
        span = max(p["end"] for p in seen) - min(p["start"] for p in seen)
        return {
            "wall_s": round(wall, 2),
            "span_s": round(span, 2),
            "most_at_once": max(sum(p["start"] <= q["start"] < p["end"] for p in seen) for q in seen),
        }
    finally:
        ray.shutdown()


if __name__ == "__main__":
    results = {"points": 8, "point_s": POINT_S, "declared_gpus": {"1": timed(1), "8": timed(8)}}
    print(results)
    print(write_result("ray", results))
