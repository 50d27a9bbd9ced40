"""The trtllm backend at the process boundary, on synthetic outputs built from the documented formats
(tests/fixtures/tune/synthetic_*): report_json and iteration-stats parsing, the acceptance-bias correction,
the argv and options per K (restart per K), and one e2e measurement with run_process faked."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from specdeploy.api import load_and_resolve
from specdeploy.engines.trtllm.tune import TrtllmBackend
from specdeploy.engines.trtllm.tune_parse import (
    correct_acceptance,
    histogram_from_chunks,
    parse_iteration_stats,
    parse_report,
)
from specdeploy.errors import StepFailed
from specdeploy.tune.setup import setup_from
from specdeploy.tune.types import Request

FIX = Path(__file__).parents[2] / "fixtures" / "tune"


def test_parse_report_json_names_the_metrics_as_the_field_does() -> None:
    """trtllm-bench's throughputs and its per-request TTFT/TPOT distributions under specdeploy's names
    (docs/design/metrics.md); its `average` is the mean, its p95 is not carried; it reports no ITL."""
    v = parse_report(json.loads((FIX / "synthetic_report_json_k4.json").read_text()))
    assert (v["request_throughput"], v["output_token_throughput"], v["output_token_throughput_per_user"]) == (
        3.05,
        780.2,
        98.4,
    )
    assert [v[f"{s}_tpot_ms"] for s in ("mean", "p50", "p90", "p99")] == [10.2, 10.0, 12.1, 14.2]
    assert [v[f"{s}_ttft_ms"] for s in ("mean", "p50", "p90", "p99")] == [45.0, 42.0, 60.0, 85.5]
    assert v["p99_itl_ms"] is None and "p95_tpot_ms" not in v
    assert v["al_reported"] == 2.23 and v["dar_reported"] == 0.3065
    with pytest.raises(StepFailed):
        parse_report({"engine": {}})


def test_iteration_stats_skip_non_drafting_rows_and_junk() -> None:
    s = parse_iteration_stats((FIX / "synthetic_iteration_log.txt").read_text().splitlines())
    assert s["iterations"] == 4 and s["drafting_iterations"] == 3
    assert s["al"] == pytest.approx((36 + 24) / 24) and s["acceptance_rate"] == pytest.approx(36 / 96)
    assert s["step_s"] == pytest.approx(0.0104)
    # ITL: each iteration's latency is the gap every one of its 8 active requests waited for its next tokens
    assert s["itl_ms"] == pytest.approx({"mean": (30.0 + 10.0 + 10.4 + 9.8) / 4, "p50": 10.0, "p90": 30.0, "p99": 30.0})
    assert (
        parse_iteration_stats(
            [
                json.dumps(
                    {
                        "specDecodingStats": {
                            "numDraftTokens": 4,
                            "numAcceptedTokens": 2,
                            "numRequestsWithDraftTokens": 1,
                        }
                    }
                )
            ]
        )["al"]
        == 3.0
    )


def test_acceptance_bias_correction_when_a_schedule_shortened_drafts() -> None:
    v = parse_report(json.loads((FIX / "synthetic_report_json_k4.json").read_text()))
    same = correct_acceptance(v, configured_k=4, effective_k=4)
    assert same["dar"] == pytest.approx(0.3065) and not same["bias_corrected"]
    short = correct_acceptance(v, configured_k=4, effective_k=2)  # bench assumed 4 drafts/step, 2 were drafted
    assert short["dar"] == pytest.approx(0.613) and short["drafted"] == pytest.approx(230.0) and short["bias_corrected"]
    off = correct_acceptance(v, configured_k=4, effective_k=0)
    assert off["dar"] is None and off["al"] == 1.0


def test_histogram_from_streamed_chunks() -> None:
    assert histogram_from_chunks([1, 2, 5, 3, 9, 0], 4) == [1, 1, 1, 0, 2]


@pytest.fixture
def backend(tmp_path: Path) -> TrtllmBackend:
    resolved = load_and_resolve("h200-eagle3")
    b = TrtllmBackend(resolved, setup_from(resolved), tmp_path)
    b.dataset = lambda path: path.write_text('{"task_id": 0, "prompt": "hi", "output_tokens": 8}\n')  # type: ignore
    return b


def test_options_restart_per_k_and_plain_decoding(backend: TrtllmBackend) -> None:
    k3 = backend.options(3)
    assert k3["speculative_config"]["max_draft_len"] == 3 and k3["enable_iter_perf_stats"] is True
    assert "speculative_config" not in backend.options(0)
    sched = backend.options(4, [[1, 7, 4], [8, 16, 2]])
    assert sched["speculative_config"]["draft_len_schedule"] == {1: 4, 8: 2, 17: 0}


def test_e2e_measurement_through_run_process(
    backend: TrtllmBackend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = []

    def fake_run(_req, argv, folder):  # noqa: ANN001, ANN202 - stands in for trtllm-bench
        seen.append(argv)
        shutil.copy(FIX / "synthetic_report_json_k4.json", folder / "bench_report.json")
        shutil.copy(FIX / "synthetic_iteration_log.txt", folder / "iteration.log")
        return type("P", (), {"duration_s": 42.0})()

    monkeypatch.setattr(backend, "_run", fake_run)
    v = backend(Request("e2e", 8, 4))
    argv = seen[0]
    assert argv[:2] == ["trtllm-bench", "--model"] and argv[argv.index("--concurrency") + 1] == "8"
    assert {"--report_json", "--iteration_log", "--streaming", "--extra_llm_api_options"} <= set(argv)
    folder = tmp_path / "e2e_c8_k4_r0"
    assert yaml.safe_load((folder / "options.yaml").read_text())["speculative_config"]["max_draft_len"] == 4
    assert v["output_token_throughput"] == 780.2 and v["cost_s"] == 42.0 and v["iter_al"] == pytest.approx(2.5)
    assert v["p99_itl_ms"] == 30.0 and v["p50_itl_ms"] == 10.0 and v["p99_tpot_ms"] == 14.2
    assert backend(Request("cost", 8, 4)) == {"step_s": pytest.approx(0.0104), "cost_s": 42.0}
