"""Stats helpers and the cost-curve probe return what the tuner reads."""

from __future__ import annotations

import pytest

from specdeploy.engines.reference.runtime import probe_costs
from specdeploy.engines.reference.runtime.models import ModelPair
from specdeploy.engines.reference.runtime.stats import expected_al
from specdeploy.metrics import distribution
from tests.unit.runtime.tiny import tiny_head, tiny_llama


def test_expected_al_from_histogram():
    hist = [0.2, 0.3, 0.5]  # a_1 = 0.8, a_2 = 0.5
    assert expected_al(hist, 0) == 1.0
    assert expected_al(hist, 1) == pytest.approx(1.8)
    assert expected_al(hist, 2) == pytest.approx(2.3)


def test_distribution_is_mean_and_nearest_rank_percentiles():
    values = [float(v) for v in range(1, 101)]
    assert distribution(values) == {"p50": 50.0, "p90": 90.0, "p99": 99.0, "mean": 50.5}
    assert distribution([])["p99"] == 0.0


def test_probe_costs_grid():
    target = tiny_llama(0)
    out = probe_costs(
        ModelPair(target, tiny_llama(1, layers=1)), batch_sizes=(1, 2), new_tokens=(1, 4), contexts=(16,), repeats=2
    )
    assert [(r["batch"], r["new_tokens"], r["context"]) for r in out["target"]] == [
        (1, 1, 16),
        (1, 4, 16),
        (2, 1, 16),
        (2, 4, 16),
    ]
    assert len(out["drafter"]) == 2 and all(r["ms"] > 0 for r in out["target"] + out["drafter"])
    assert probe_costs(ModelPair(target), new_tokens=(1,), contexts=(8,), repeats=1)["drafter"] == []


def test_probe_costs_times_an_eagle_head_step():
    """An EAGLE head has no input_ids forward; its step is timed through its fused inputs (the tuner's cost
    probe failed on every point for eagle3 before)."""
    target = tiny_llama(0)
    out = probe_costs(
        ModelPair(target, tiny_head(target)), batch_sizes=(1, 2), new_tokens=(1,), contexts=(16,), repeats=2
    )
    assert [(r["batch"], r["context"]) for r in out["drafter"]] == [(1, 16), (2, 16)]
    assert all(r["ms"] > 0 for r in out["drafter"])


def test_probe_times_its_points_in_rounds():
    """A slow spell of a shared machine must slow every point alike: each round visits every point once (one
    point's repeats back to back made T = 2 look 1.0x to 1.2x of T = 1 from probe to probe), rolled back after."""
    import torch

    from specdeploy.engines.reference.runtime.cache import KVState
    from specdeploy.engines.reference.runtime.probe import _interleaved_ms

    kv = KVState(tiny_llama(0), 1)
    kv.forward(torch.zeros(1, 4, dtype=torch.long), torch.ones(1, 4, dtype=torch.bool))
    order: list[int] = []

    def feed(point: int, tokens: int):  # type: ignore[no-untyped-def]
        def run() -> None:
            order.append(point)
            kv.forward(torch.zeros(1, tokens, dtype=torch.long), torch.ones(1, tokens, dtype=torch.bool))

        return run

    ms = _interleaved_ms([(kv, feed(0, 1)), (kv, feed(1, 3))], repeats=2)
    assert order == [0, 1, 0, 1, 0, 1] and kv.width == 4
    assert len(ms) == 2 and all(t > 0 for t in ms)
