"""`tune --backend vllm` on the real vLLM: the schedule of the shipped CPU profile, labelled measured, from vLLM's
own spec-decode counters (two engines: K = 2 and plain; one concurrency keeps the run to a few engine starts)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from specdeploy.metrics import MEASURED_KEYS

CPU = Path(__file__).resolve().parents[2] / "profiles" / "cpu" / "cpu-smollm2-vllm.yaml"


@pytest.mark.slow
@pytest.mark.vllm_tune
@pytest.mark.usefixtures("vllm_install")  # skips, saying why, without a vLLM environment
def test_tune_measures_on_vllm(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    sets = ["speculative.draft_len=auto", "tune.concurrency=[1]", "tune.draft_lens=[2]", "tune.prompts=2",
            "tune.repeats=1", "tune.output_len=16"]
    run = subprocess.run([sys.executable, "-m", "specdeploy", "tune", str(CPU), "--backend", "vllm", "--out",
                          str(tmp_path), *[w for s in sets for w in ("--set", s)]], capture_output=True, text=True,
                         env={**os.environ, "NO_COLOR": "1"}, timeout=3600)
    assert run.returncode == 0, run.stdout + run.stderr
    result = json.loads((tmp_path / "cpu-smollm2-vllm" / "tune" / "result.json").read_text())
    assert result["evidence"] == "measured" and result["backend"] == "vllm"
    schedule = result["schedule"]
    assert set(schedule["schedule"]) == {"1"} and schedule["schedule"]["1"] in (0, 2)
    assert not schedule["clamped"]  # vLLM's schedule has no TensorRT-LLM clamp
    e2e = [m["values"] for m in result["measurements"] if m["request"]["kind"] == "e2e"]
    assert e2e and all(v[name] is not None for v in e2e for name in MEASURED_KEYS)  # docs/design/metrics.md
