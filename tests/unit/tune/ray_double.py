"""A measurement backend double for the Ray tests, named for what it is: it answers with the performance model
(deterministic), sleeps `seconds` like a device would, and records which GPUs each point got and when."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from specdeploy.tune.types import Request


class RecordingDouble:
    def __init__(self, inner: Any, log: Path, seconds: float, die_once_on: str | None = None) -> None:
        self.inner, self.log, self.seconds, self.die_once_on = inner, Path(log), seconds, die_once_on

    def __call__(self, request: Request) -> dict[str, Any]:
        import ray

        start = time.monotonic()
        marker = self.log.with_suffix(".died")
        if request.key == self.die_once_on and not marker.exists():
            marker.write_text("killed")
            os._exit(1)  # the worker process dies mid-point, as a killed or OOM-killed worker does
        time.sleep(self.seconds)
        values = dict(self.inner(request))
        line = {
            "key": request.key,
            "k": request.k,
            "gpus": [str(g) for g in ray.get_gpu_ids()],
            "start": start,
            "end": time.monotonic(),
            "pid": os.getpid(),
        }
        with self.log.open("a") as handle:
            handle.write(json.dumps(line) + "\n")
        return values


def intervals(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
