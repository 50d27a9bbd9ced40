"""The ask/tell base every search strategy shares. A strategy never measures: `plan()` yields batches of
`Request`s and is sent their `Measurement`s (None for a run that crashed twice); the e2e ones go to its `Book`."""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Mapping
from itertools import zip_longest
from typing import Any

from specdeploy.perfmodel.predict import StepTimer
from specdeploy.tune.book import Book, Decision
from specdeploy.tune.setup import TuneSetup
from specdeploy.tune.types import Measurement, Request

Batch = list[Request]
Results = list[Measurement | None]
PriorFactory = Callable[[Mapping[int, float]], tuple[StepTimer, dict[str, Any]]]
"""K=0 step times per batch -> (the calibrated prior timer, the calibration record)."""


class Strategy:
    """Generator-driven ask/tell: `plan()` yields request batches and receives their results."""

    name = "base"

    def __init__(self, setup: TuneSetup, prior: PriorFactory | None = None) -> None:
        self.setup, self.prior = setup, prior
        self.book = Book(setup)
        self.log: list[Measurement] = []
        self._gen = self.plan()
        self._pending: Batch = self._advance(None)

    def _advance(self, results: Results | None) -> Batch:
        try:
            return next(self._gen) if results is None else self._gen.send(results)
        except StopIteration:
            return []

    def ask(self) -> Batch:
        return list(self._pending)

    def tell(self, results: Results) -> None:
        self.log.extend(m for m in results if m is not None)
        self.book.add(results)
        self._pending = self._advance(results)

    def plan(self) -> Generator[Batch, Results, None]:
        raise NotImplementedError
        yield []

    def decisions(self) -> dict[int, Decision]:
        return {c: self.book.decide(c) for c in self.setup.concurrency}

    def fit_record(self) -> dict[str, Any]:
        return {}

    def repeats(self, c: int, k: int) -> Batch:
        """The next `tune.repeats` runs of a point; one for a prediction (asked again, it says the same)."""
        return self.book.ask_repeats(c, k, 1 if self.setup.predicted else self.setup.repeats)

    def rounds(self, points: Iterable[tuple[int, int]]) -> Batch:
        """The repeats of every point, in rounds that run each point once: a slow spell of a shared machine then
        slows the points a decision compares alike, instead of every repeat of one of them."""
        per_point = [self.repeats(c, k) for c, k in points]
        return [r for one_round in zip_longest(*per_point) for r in one_round if r is not None]

    def remeasure_noisy(self) -> Generator[Batch, Results, None]:
        if noisy := self.book.noisy():
            yield self.rounds(noisy)
