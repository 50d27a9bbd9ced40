"""The checkpoint: every measurement appended to a JSONL file and fsynced, so an interrupted or repeated tune
replays what it has and measures only what is missing (model_analyzer's state manager, docs/design/tuning.md §1).

Line 1 is a header with the hash of the tune setup; a checkpoint from another setup is never replayed.
A crashed measurement is recorded (`ok: false`), retried once, then reported: the tune goes on without it.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from specdeploy.boundedio import loads_json
from specdeploy.errors import UsageError
from specdeploy.tune.types import MeasureFn, Measurement, Request

FORMAT = "specdeploy.tune-checkpoint/1"


class Checkpoint:
    def __init__(self, path: str | os.PathLike[str], setup_hash: str, *, fresh: bool = False) -> None:
        self.path = Path(path)
        self.setup_hash = setup_hash
        self.records: dict[str, Measurement] = {}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if fresh or not self._load():
            self.path.write_text(json.dumps({"format": FORMAT, "setup_hash": setup_hash}, allow_nan=False) + "\n")

    def _load(self) -> bool:
        """Read an existing checkpoint of this setup; False (start over) when absent or from another setup."""
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return False
        try:
            header = loads_json(lines[0], str(self.path)) if lines else {}
        except ValueError:
            header = {}
        header = header if isinstance(header, dict) else {}
        if header.get("format") != FORMAT:
            raise UsageError(f"{self.path} is not a specdeploy tune checkpoint", hint="pass --fresh to replace it")
        if header.get("setup_hash") != self.setup_hash:
            self.path.replace(self.path.with_suffix(f".{header.get('setup_hash', 'old')[:12]}.jsonl"))
            return False
        for line in lines[1:]:
            try:
                record = Measurement.from_dict(loads_json(line))
            except (ValueError, KeyError, TypeError):
                continue  # a line cut short by a kill: that measurement is simply redone
            if record.ok:
                self.records[record.request.key] = record
        return True

    def get(self, request: Request) -> Measurement | None:
        return self.records.get(request.key)

    def append(self, record: Measurement) -> None:
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({**record.to_dict(), "at": time.time()}, default=str, allow_nan=False) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        if record.ok:
            self.records[record.request.key] = record


class Recorder:
    """Wraps a backend: replay from the checkpoint, else measure (retry a crash once), append, count."""

    def __init__(
        self,
        measure: MeasureFn,
        checkpoint: Checkpoint,
        on_measure: Callable[[Measurement], None] | None = None,
        pool: Any = None,
    ) -> None:
        self.measure, self.checkpoint, self.on_measure = measure, checkpoint, on_measure
        self.pool = pool
        """A point pool (`specdeploy.tune.parallel.RayPool`, which measures with its own backend), or None."""
        self.calls = 0
        self.replayed = 0
        self.spent_s = 0.0
        self.failures: list[dict[str, Any]] = []
        self.log: list[Measurement] = []

    def __call__(self, request: Request) -> Measurement | None:
        if self.pool is not None:
            return self.measure_batch([request])[0]
        done = self._replay(request)
        if done is not None:
            return done
        errors = []
        for attempt in (1, 2):
            try:
                values: dict[str, Any] | str = dict(self.measure(request))
            except (KeyboardInterrupt, SystemExit, UsageError):
                raise
            except Exception as exc:  # noqa: BLE001 - a crashed run is data: recorded, retried once, reported
                values = f"{type(exc).__name__}: {exc}"
                errors.append(values)
            record = self._keep(request, values, attempt)
            if record is not None:
                return record
        self.failures.append({"key": request.key, "request": request.to_dict(), "errors": errors})
        return None

    def free(self, request: Request) -> bool:
        """Answering `request` costs no device time: it is in the checkpoint, or the backend answers it from what it
        ran already (its optional `measured(request)`: vLLM's engine of that K ran every concurrency)."""
        known = getattr(self.measure, "measured", None)
        return self.checkpoint.get(request) is not None or bool(known is not None and known(request))

    def measure_batch(self, batch: list[Request]) -> list[Measurement | None]:
        """A batch through the point pool: replayed where checkpointed, else
        measured in parallel points, each appended as its point completes; failures retried once, as serially."""
        results: dict[str, Measurement | None] = {}
        todo = []
        for request in batch:
            done = self._replay(request)
            if done is not None:
                results[request.key] = done
            else:
                todo.append(request)
        from specdeploy.tune.parallel import points_of

        errors: dict[str, list[str]] = {}
        for attempt in (1, 2):
            failed = []
            for group, values in self.pool.run(points_of(todo)) if todo else ():
                for request, value in zip(group, values, strict=True):
                    record = self._keep(request, value, attempt)
                    if record is None:
                        errors.setdefault(request.key, []).append(str(value))
                        failed.append(request)
                    else:
                        results[request.key] = record
            todo = failed
        for request in todo:
            self.failures.append({"key": request.key, "request": request.to_dict(), "errors": errors[request.key]})
        return [results.get(request.key) for request in batch]

    def _replay(self, request: Request) -> Measurement | None:
        """The checkpoint's measurement of `request` (counted as replayed), or None."""
        done = self.checkpoint.get(request)
        if done is None:
            return None
        self.replayed += 1
        return self._done(done)

    def _keep(self, request: Request, values: dict[str, Any] | str, attempt: int) -> Measurement | None:
        """Append one attempt (its values, or its error's text) to the checkpoint; the measurement if it ran."""
        self.calls += 1
        if isinstance(values, str):
            self.checkpoint.append(Measurement(request, {}, 0.0, False, values, attempt))
            return None
        cost = float(values.pop("cost_s", 0.0))
        self.spent_s += cost
        record = Measurement(request, values, cost, True, None, attempt)
        self.checkpoint.append(record)
        return self._done(record)

    def _done(self, record: Measurement) -> Measurement:
        self.log.append(record)
        if self.on_measure:
            self.on_measure(record)
        return record
