"""Reading vLLM's numbers (/metrics text, the factorized tuner's histogram, ITL buckets)."""

from __future__ import annotations

from specdeploy.engines.vllm.measure import Point, itl_summary
from specdeploy.engines.vllm.serve import parse_counters
from specdeploy.metrics import LATENCIES, OUTPUT_THROUGHPUT, REQUEST_THROUGHPUT, STATS, key

METRICS = """\
# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{engine="0",model_name="smollm2"} 19.0
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="smollm2"} 57.0
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="smollm2"} 38.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="smollm2",position="1"} 12.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="smollm2",position="0"} 15.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="smollm2",position="2"} 11.0
"""


def test_parse_counters_orders_positions() -> None:
    out = parse_counters(METRICS)
    assert out == {"drafts": 19.0, "draft_tokens": 57.0, "accepted": 38.0, "per_position": [15.0, 12.0, 11.0]}


def test_histogram_counts_steps_by_drafts_accepted() -> None:
    point = Point(1, 0.0, 0.0, {}, {}, {}, drafts=19, draft_tokens=57, accepted=38, accepted_per_position=[15, 12, 11])
    assert point.histogram() == [4.0, 3.0, 1.0, 11.0]
    assert point.acceptance_length == 1 + 38 / 19


def test_itl_quantiles_are_bucket_bounds() -> None:
    hist = {"count": 10, "sum": 0.2, "buckets": {"0.01": 2, "0.025": 9, "0.05": 10, "+Inf": 10}}
    assert itl_summary(hist) == {"mean": 20.0, "p50": 25.0, "p90": 25.0, "p99": 50.0}


def test_a_measured_point_is_recorded_under_the_metric_names() -> None:
    stats = {"mean": 2.0, "p50": 1.5, "p90": 3.0, "p99": 4.0}
    point = Point(2, 30.0, 0.5, stats, stats, stats, drafts=0, draft_tokens=0, accepted=0, accepted_per_position=[])
    record = point.to_dict()
    assert record[REQUEST_THROUGHPUT] == 0.5 and record[OUTPUT_THROUGHPUT] == 30.0
    assert {key(name, stat) for name in LATENCIES for stat in STATS} <= set(record)
    assert record["p99_itl_ms"] == 4.0 and "output_tok_s" not in record and "ttft_ms" not in record
