"""bench/vllm.py's tune figures name what they derive from a stored sweep as the metrics are named
(docs/design/metrics.md): the served optimum beside plain decoding, and the truth a tune is scored on."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from specdeploy.metrics import OUTPUT_THROUGHPUT
from specdeploy.tune.types import PLAIN_THROUGHPUT
from tests.helpers import load_script


def vllm_tune() -> ModuleType:
    return load_script("bench/vllm_tune.py")


def speed(rates: dict[str, float], al: float = 1.0) -> dict[str, Any]:
    """A stored `speed` record (per concurrency: each clock's median over rounds), as `--sweep` writes it."""
    return {c: {"cpu": {"median": v, "runs": [v], "rel_mad": 0.0}, "al": al} for c, v in rates.items()}


SWEPT = {
    "clock": "cpu",
    "rounds": 3,
    "points": {"0": {"speed": speed({"1": 10.0, "2": 30.0})}, "1": {"speed": speed({"1": 12.0, "2": 28.0}, 1.5)}},
}


def names(record: Any) -> set[str]:
    if isinstance(record, dict):
        return set(record) | {n for v in record.values() for n in names(v)}
    return set()


def test_the_served_optimum_is_named_output_token_throughput_beside_plain() -> None:
    figures = vllm_tune().served_figures(SWEPT, {1: 1, 2: 0}, speed({"1": 11.0, "2": 26.0}, 1.4))
    assert figures["per_concurrency"]["1"] == {
        "k": 1,
        OUTPUT_THROUGHPUT: 11.0,
        "al": 1.4,
        PLAIN_THROUGHPUT: 10.0,
        f"k_engine_{OUTPUT_THROUGHPUT}": 12.0,
    }
    assert figures["mean_over_concurrencies"] == {OUTPUT_THROUGHPUT: 18.5, PLAIN_THROUGHPUT: 20.0}
    assert not any("tps" in n for n in names({k: v for k, v in figures.items() if k != "speed"}))


def test_a_tune_is_scored_on_the_sweeps_output_token_throughput() -> None:
    tuned = {
        "setup": {"draft_lens": [1]},
        "decisions": {"1": {"k": 0, "k_emitted": 0}, "2": {"k": 0, "k_emitted": 0}},
        "schedule": {"speculation": False},
    }
    scored = vllm_tune().quality(tuned, SWEPT)
    assert scored["per_concurrency"]["1"][f"truth_{OUTPUT_THROUGHPUT}"] == {"0": 10.0, "1": 12.0}
    assert scored["min_quality"] == round(10.0 / 12.0, 4)
    assert not any("tps" in n for n in names(scored))
