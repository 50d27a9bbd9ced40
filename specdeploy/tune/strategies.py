"""Search strategies (ask/tell, `search.Strategy`): `factorized` (measure acceptance once and cost once, predict,
confirm the top candidates; `factorized.py`), and the `grid` and `hillclimb` baselines here. Register new ones
in `STRATEGIES`."""

from __future__ import annotations

from collections.abc import Generator

from specdeploy.tune.factorized import Factorized
from specdeploy.tune.search import Batch, Results, Strategy


def coarse_to_fine(ks: list[int]) -> list[int]:
    """0, K_max, then midpoints: the order a budget-limited grid visits draft lengths."""
    full = [0, *ks]
    order, spans = [0, full[-1]], [(0, len(full) - 1)]
    while spans:
        lo, hi = spans.pop(0)
        if hi - lo > 1:
            mid = (lo + hi) // 2
            order.append(full[mid])
            spans += [(lo, mid), (mid, hi)]
    return list(dict.fromkeys(order))


class Grid(Strategy):
    """Exhaustive over (c, K) in coarse-to-fine order; with a budget it stops wherever the budget ends."""

    name = "grid"

    def plan(self) -> Generator[Batch, Results, None]:
        for k in coarse_to_fine(list(self.setup.draft_lens)):
            for c in self.setup.concurrency:
                yield self.repeats(c, k)


class HillClimb(Strategy):
    """Per concurrency: plain decoding, then the mechanism's default K, then step +-1 while it improves."""

    name = "hillclimb"
    start_k = 3

    def plan(self) -> Generator[Batch, Results, None]:
        ks = list(self.setup.draft_lens)
        start = min(ks, key=lambda k: abs(k - self.start_k))
        yield self.rounds((c, k) for c in self.setup.concurrency for k in (0, start))
        state = {c: (start, 0) for c in self.setup.concurrency}  # (current K, direction: 0 = try both)
        while state:
            asks: dict[int, list[int]] = {}
            for c, (k, d) in state.items():
                i = ks.index(k)
                nxt = [ks[j] for j in ((i - 1, i + 1) if d == 0 else (i + d,)) if 0 <= j < len(ks)]
                asks[c] = [n for n in nxt if not self.book.n(c, n)]
            yield self.rounds((c, n) for c, nk in asks.items() for n in nk)
            for c, nk in list(asks.items()):
                here = self.book.summary(c, state[c][0])
                better = [n for n in nk if (s := self.book.summary(c, n)) and here and s.score > here.score]
                if not better:
                    del state[c]
                    continue
                n = max(better, key=lambda n: self.book.summary(c, n).score)  # type: ignore[union-attr]
                state[c] = (n, 1 if n > state[c][0] else -1)


STRATEGIES: dict[str, type[Strategy]] = {s.name: s for s in (Factorized, Grid, HillClimb)}
