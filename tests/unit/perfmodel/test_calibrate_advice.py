"""Calibration recovers known factors; advice and whatif produce the documented, JSON-able shapes;
the GPU bench script runs on the CPU with --tiny, its end-to-end runtime section included."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from specdeploy.metrics import OUTPUT_THROUGHPUT
from specdeploy.perfmodel import (
    Efficiency,
    Measured,
    advise,
    calibrate,
    calibrate_file,
    forward_cost,
    pseudo_gpu,
    whatif,
)
from specdeploy.perfmodel.advice import off_text
from specdeploy.perfmodel.shapes import EAGLE3_LLAMA_3_1_8B, LLAMA_3_1_8B, SMOLLM2_135M
from specdeploy.resolve.gpus import GPUS

REPO = Path(__file__).resolve().parents[3]


def test_calibration_recovers_synthetic_factors() -> None:
    gpu = pseudo_gpu()
    truth = Efficiency(compute=0.3, bandwidth=0.5, step_overhead_s=0.0, layer_overhead_s=2e-4)
    points = [
        Measured(b, t, ctx, forward_cost(SMOLLM2_135M, gpu, batch=b, tokens=t, context=ctx, eff=truth).total_s)
        for b in (1, 4, 16)
        for t in (1, 4, 16)
        for ctx in (64, 512)
    ]
    fit = calibrate(SMOLLM2_135M, gpu, points, base=Efficiency(step_overhead_s=0.0))
    assert fit.eff.compute == pytest.approx(0.3, rel=0.01)
    assert fit.eff.bandwidth == pytest.approx(0.5, rel=0.01)
    assert fit.eff.layer_overhead_s == pytest.approx(2e-4, rel=0.01)
    assert fit.max_rel_err < 1e-3


def test_calibration_separates_step_and_layer_overhead_across_models() -> None:
    from specdeploy.perfmodel.calibrate import fit_works
    from specdeploy.perfmodel.cost import forward_work, step_time

    gpu = pseudo_gpu()
    truth = Efficiency(compute=0.2, bandwidth=0.4, step_overhead_s=1e-3, layer_overhead_s=1e-4)
    works = [
        forward_work(m, batch=b, tokens=t, context=128)
        for m in (SMOLLM2_135M, EAGLE3_LLAMA_3_1_8B)
        for b in (1, 8, 64)
        for t in (1, 8, 32)
    ]
    fit = fit_works(works, [step_time(w, gpu, truth).total_s for w in works], gpu)
    assert fit.eff.step_overhead_s == pytest.approx(1e-3, rel=0.05)
    assert fit.eff.layer_overhead_s == pytest.approx(1e-4, rel=0.05)


def test_calibration_recovers_the_cpu_terms() -> None:
    """Untiled attention and a per-cached-position overhead (the CPU runtime's form), fitted back from points made
    with known values on the bench's B x T x L grid."""
    from specdeploy.perfmodel.calibrate import DEFAULT_FIT

    gpu = pseudo_gpu()
    truth = Efficiency(compute=0.3, bandwidth=0.6, step_overhead_s=0.0, layer_overhead_s=2e-3, cache_overhead_s=1e-6)
    points = [
        Measured(
            b,
            t,
            ctx,
            forward_cost(SMOLLM2_135M, gpu, batch=b, tokens=t, context=ctx, eff=truth, tile_rows=None).total_s,
        )
        for b in (1, 2, 4)
        for t in (1, 2, 3, 5, 9)
        for ctx in (64, 256, 1024)
    ]
    fit = calibrate(
        SMOLLM2_135M,
        gpu,
        points,
        base=Efficiency(step_overhead_s=0.0),
        tile_rows=None,
        fit=(*DEFAULT_FIT, "cache_overhead_s"),
    )
    assert fit.eff.compute == pytest.approx(0.3, rel=0.01)
    assert fit.eff.bandwidth == pytest.approx(0.6, rel=0.01)
    assert fit.eff.layer_overhead_s == pytest.approx(2e-3, rel=0.01)
    assert fit.eff.cache_overhead_s == pytest.approx(1e-6, rel=0.01)
    assert fit.max_rel_err < 1e-3
    default = calibrate(SMOLLM2_135M, gpu, points, base=Efficiency(step_overhead_s=0.0), tile_rows=None)
    assert default.eff.cache_overhead_s == 0.0  # fitted only when asked
    assert default.max_rel_err > 0.05


def test_advice_states_the_guidelines_with_numbers() -> None:
    advice = advise(LLAMA_3_1_8B, GPUS["h200"], "eagle3", EAGLE3_LLAMA_3_1_8B, concurrency=[1, 16, 64], k_max=8)
    text = "\n".join(advice.lines())
    assert "G = 4 → attention-bound optimum D = 31" in text
    assert "verification turns compute-bound at B × (K + 1) ≥" in text
    assert "D = 31, 63, 95" in text
    assert "schedule: K = " in text and text.count("G4: c = ") == 3
    assert {row["mechanism"] for row in advice.mechanisms} >= {"eagle3", "ngram", "draft_target", "medusa"}
    json.dumps(advice.to_dict())
    # where speculation stops, in words: never "off above c = > 4096" or "off above c = never"
    assert "off above c = >" not in text and "off above c = never" not in text
    for row in advice.mechanisms:
        assert off_text(row["max_concurrency"]) in text


def test_where_speculation_stops_reads_as_a_sentence() -> None:
    assert [off_text(c) for c in (0, None, 48)] == [
        "speculation never pays",
        "still pays at c = 4096",
        "off above c = 48",
    ]


def test_whatif_result_shape() -> None:
    result = whatif(
        LLAMA_3_1_8B, GPUS["h200"], "eagle3", draft=EAGLE3_LLAMA_3_1_8B, concurrency=[1, 8, 64], k_values=[1, 2, 4]
    )
    assert result["format"] == "specdeploy.whatif/1" and result["backend"] == "model"
    assert result["candidates"] == [0, 1, 2, 4]
    assert len(result["points"]) == 3 * 4
    assert [row["concurrency"] for row in result["schedule"]] == [1, 8, 64]
    assert all(p["speedup"] == 1.0 for p in result["points"] if p["k"] == 0)
    assert result["acceptance"]["prior"] is True
    json.loads(json.dumps(result))


def test_step_cost_bench_tiny_runs_on_cpu(tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="bench/gpu/step_cost.py runs torch (the reference extra)")
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "gpu" / "step_cost.py"),
            "--tiny",
            "--repeats",
            "2",
            "--warmup",
            "1",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads((tmp_path / "step_cost-tiny.json").read_text())
    assert data["format"] == "specdeploy.step-cost/1" and data["complete"]
    points = data["shapes"][0]["points"]
    assert len(points) == 4 and all(p["seconds"] > 0 for p in points)
    fit = calibrate_file(str(tmp_path / "step_cost-tiny.json"))  # the file is a valid calibration input
    assert fit.points == 4
    e2e = data["e2e"]  # the reference runtime end to end: a tiny random pair on the CPU
    assert e2e["complete"] and e2e["skipped"] == [{"what": "eagle3", "reason": "no EAGLE-3 head for the tiny target"}]
    assert [r["category"] for r in e2e["prompts"]] == ["coding", "coding", "writing", "reasoning"]
    runs = {(r["mechanism"], r["k"], r["concurrency"]): r for r in e2e["runs"]}
    assert set(runs) == {(m, k, c) for m, k in [("none", 0), ("draft_target", 2), ("draft_target", 4)] for c in (1, 4)}
    assert all(r["identical"] is True and r[OUTPUT_THROUGHPUT] > 0 for r in runs.values())  # greedy: lossless
    assert all(runs["none", 0, c]["acceptance_length"] == 1.0 for c in (1, 4))
    assert all(1.0 < runs["draft_target", k, c]["acceptance_length"] <= k + 1 for k in (2, 4) for c in (1, 4))
    assert len(e2e["probe"]["target"]) == 4 and len(e2e["probe"]["drafter"]) == 2
    assert all(p["ms"] > 0 for p in e2e["probe"]["target"] + e2e["probe"]["drafter"])
    assert "end to end: tiny random Llama" in proc.stdout


def test_step_cost_e2e_stops_at_its_budget_and_names_what_it_skipped() -> None:
    pytest.importorskip("torch", reason="the end-to-end phase loads the reference runtime (the reference extra)")
    spec = importlib.util.spec_from_file_location("runtime_e2e", REPO / "bench" / "gpu" / "runtime_e2e.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    e2e = module.run_e2e("cpu", True, budget_s=1e-9)  # the pair loads, then no run fits
    assert not e2e["complete"] and not e2e["runs"] and "probe" not in e2e
    budget = [s["what"] for s in e2e["skipped"] if s["reason"] == "budget"]
    assert budget[:3] == ["none K=0 c=1", "none K=0 c=4", "probe_costs"] and len(budget) == 3 + 2 * 2
    assert module.run_e2e("cpu", True, budget_s=0)["skipped"] == [
        {"what": "end-to-end", "reason": "no time budget (--e2e-s)"}
    ]
