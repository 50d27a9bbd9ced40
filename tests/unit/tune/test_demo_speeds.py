"""`make demo`'s summary of the tune (tools/demo.py `speeds`, recorded by bench/demo.py) names its throughputs as
the metrics are named (docs/design/metrics.md)."""

from __future__ import annotations

from specdeploy.tune.types import PLAIN_THROUGHPUT
from tests.helpers import load_script


def test_the_tunes_plain_and_best_speculative_throughput_keep_the_metric_names() -> None:
    """A measured decision at c = 1 as a tune result records it: each candidate K's median over its repeats."""
    result = {
        "setup": {"dataset": "mt-bench", "prompts": 8},
        "decisions": [
            {
                "concurrency": 1,
                "k": 1,
                "reason": "best measured",
                "baseline": 20.0,
                "candidates": {"0": {"median": 20.0}, "1": {"median": 23.0}, "2": {"median": 21.0}},
            }
        ],
    }
    module = load_script("tools/demo.py")
    speeds = module.speeds(result)
    assert speeds[PLAIN_THROUGHPUT] == 20.0
    assert speeds[module.SPECULATIVE_THROUGHPUT] == 23.0 and speeds["best_speculative_k"] == 1
    assert speeds["speedup"] == 23.0 / 20.0
    assert not any("tokens_per_s" in name for name in speeds)
