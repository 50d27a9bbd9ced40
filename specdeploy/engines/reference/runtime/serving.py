"""One background decode loop for a server: requests arrive from any thread, decode together in flight.

A request is `submit`ted with its token ids, its own settings and a callback; the loop admits it when a slot
is free (at most `max_batch` rows decode together), picks the draft length for the live batch size at every
step (the tuned schedule, or the request's own), and calls back after every step with the tokens that step
accepted: a streaming server sends them at once, another collects them. The drafter chains greedily; sampled
rows verify its drafts as point masses, so every row stays exact for its own sampling settings. Every step's
first-draft acceptance goes to the silent-drafter check (health.py), whose warning lands in the server's log.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from specdeploy.engines.reference.runtime import health
from specdeploy.engines.reference.runtime.drafters import make_drafter
from specdeploy.engines.reference.runtime.engine import Batch, RowSpec
from specdeploy.engines.reference.runtime.stats import Recorder


@dataclass(frozen=True)
class Emitted:
    """What one step gave one request: its new tokens, the K in force (the prefill's first token: the K its
    next step will draft with), whether the request is done, the rows that decoded together, its drafts so far."""

    tokens: list[int]
    k: int
    finished: bool
    batch: int
    drafted: int
    accepted: int


Emit = Callable[[Emitted], bool]  # True: the request is complete (a stop string: it sent its last response)


@dataclass
class Request:
    ids: list[int]
    spec: RowSpec
    emit: Emit
    fail: Callable[[BaseException], None]
    draft_len: int | None = None  # its own K; None: the schedule's at the live batch size
    sent: int = field(default=0, init=False)


class InflightLoop:
    """The decode loop thread; `k_at(batch)` is the schedule's draft length at a live batch size."""

    def __init__(
        self, pair: Any, mechanism: str, k_at: Callable[[int], int], max_batch: int, max_draft_len: int
    ) -> None:
        self.pair, self.mechanism, self.k_at, self.max_batch = pair, mechanism, k_at, max(1, max_batch)
        self.max_draft_len = max_draft_len
        self.waiting: deque[Request] = deque()
        self.wake = threading.Condition()
        self.closed = False
        self.thread = threading.Thread(target=self._run, name="specdeploy-decode", daemon=True)
        self.thread.start()

    def submit(self, request: Request) -> None:
        with self.wake:
            if self.closed:
                raise RuntimeError("the decode loop is stopped")
            self.waiting.append(request)
            self.wake.notify()

    def close(self) -> None:
        with self.wake:
            self.closed = True
            self.wake.notify()
        self.thread.join(timeout=30)

    def _run(self) -> None:
        while not self.closed:
            running: dict[int, Request] = {}
            try:
                self._serve(running)
            except Exception as exc:  # noqa: BLE001 - fail what was in flight, start a fresh batch
                for request in running.values():
                    try:
                        request.fail(exc)
                    except Exception:  # noqa: BLE001, S110 - its client is gone already
                        pass

    @torch.inference_mode()
    def _serve(self, running: dict[int, Request]) -> None:
        drafter = make_drafter(self.mechanism, self.pair, 0.0, torch.Generator(), 3)
        rec = Recorder(self.max_draft_len)
        batch = Batch(self.pair, drafter, rec)
        try:
            while True:
                rec.forget_timings()
                with self.wake:
                    while not self.waiting and not batch.active and not self.closed:
                        self.wake.wait()
                    if self.closed:
                        return
                    free = self.max_batch - len(batch.active)
                    joining = [self.waiting.popleft() for _ in range(min(free, len(self.waiting)))]
                if joining:
                    indexes = [batch.add(r.ids, r.spec) for r in joining]
                    running.update(zip(indexes, joining, strict=True))
                    batch.admit(indexes)
                    size = len(batch.active) or len(indexes)
                    self._report(batch, running, indexes, self.k_at(size), size, _own(running, indexes))
                if batch.active:
                    stepping = list(batch.active)
                    k = self.k_at(len(stepping))
                    own = _own(running, stepping)
                    batch.step(k, own)
                    health.observe(self.pair, self.mechanism, *rec.take_first_drafts())
                    self._report(batch, running, stepping, k, len(stepping), own)
        finally:
            drafter.close()

    def _report(
        self,
        batch: Batch,
        running: dict[int, Request],
        rows: list[int],
        k: int,
        size: int,
        own: dict[int, int] | None = None,
    ) -> None:
        """Call back every row with what this step emitted; a row done, or complete on its own (a stop string,
        a client gone), leaves for good."""
        stop = []
        for i in rows:
            request = running[i]
            new = batch.outputs[i][request.sent :]
            request.sent = len(batch.outputs[i])
            finished = i not in batch.active
            try:
                complete = request.emit(
                    Emitted(new, (own or {}).get(i, k), finished, size, batch.drafted[i], batch.accepted[i])
                )
            except Exception:  # noqa: BLE001 - its client is gone (sender closed): drop it, serve the others
                complete = True
            if finished:
                self._drop(batch, running, i)
            elif complete:
                batch.stopped.add(i)
                stop.append(i)
        if stop:
            batch.leave(list(batch.active))
            for i in stop:
                self._drop(batch, running, i)

    @staticmethod
    def _drop(batch: Batch, running: dict[int, Request], i: int) -> None:
        del running[i]
        batch.release(i)


def _own(running: dict[int, Request], rows: list[int]) -> dict[int, int]:
    """The rows whose request set its own draft length."""
    return {i: k for i in rows if (k := running[i].draft_len) is not None}
