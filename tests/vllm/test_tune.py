"""The tune on the real vLLM: `specdeploy build` of the shipped CPU profile (the EAGLE head, draft_len: auto)
measures its schedule on vLLM and emits it, labelled measured; n-gram (one engine per K: no chain, so no
histogram at K_max covers the shorter K) tunes a short setup through `specdeploy tune`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from specdeploy.metrics import MEASURED_KEYS

CPU = Path(__file__).resolve().parents[2] / "profiles" / "cpu" / "cpu-smollm2-vllm.yaml"


def _specdeploy(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "specdeploy", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
        timeout=3600,
    )


@pytest.mark.slow
@pytest.mark.vllm_tune
@pytest.mark.usefixtures("vllm_install")  # skips, saying why, without a vLLM environment
def test_the_cpu_profile_builds_with_its_draft_length_tuned_on_vllm(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    built = _specdeploy("build", str(CPU), "--out", str(tmp_path))
    assert built.returncode == 0, built.stdout + built.stderr
    art = tmp_path / CPU.stem
    result = json.loads((art / "tune" / "result.json").read_text())
    assert result["evidence"] == "measured" and result["backend"] == "vllm" and result["strategy"] == "factorized"
    probes = [m for m in result["measurements"] if m["request"]["kind"] in ("acceptance", "cost")]
    assert {m["request"]["k"] for m in probes} == {0, 4}  # plain and K_max: another K would cost an engine start
    # every concurrency of an engine answers: 7 probes or more (acceptance, c = 1, 2, 4 at K = 0 and 4) from two
    # engines, a third only where a probe is asked a third time; an engine's run is paid by its first request
    assert len(probes) >= 7 and len([m for m in probes if m["cost_s"]]) <= 3
    assert len([m for m in result["measurements"] if m["cost_s"]]) <= 6  # engines started in all
    assert {m["values"]["clock"] for m in result["measurements"] if m["request"]["kind"] == "e2e"} == {"cpu"}
    schedule = result["schedule"]
    assert set(schedule["schedule"]) <= {"1", "2", "4"} and not schedule["clamped"]
    config = yaml.safe_load((art / "vllm-serve.yaml").read_text())
    if schedule["speculation"]:  # the tuned schedule as vLLM's per-batch-size ranges
        spec = config["speculative-config"]
        assert spec["method"] == "eagle3" and spec["num_speculative_tokens"] == schedule["draft_len"]
        ranges = spec["num_speculative_tokens_per_batch_size"]
        for d in result["decisions"]:
            assert [k for lo, hi, k in ranges if lo <= d["concurrency"] <= hi] == [d["k_emitted"]]
    else:  # speculation never paid: vLLM serves plain decoding
        assert "speculative-config" not in config
    assert "accepts vllm-serve.yaml" in built.stdout + built.stderr


@pytest.mark.slow
@pytest.mark.vllm_tune
@pytest.mark.usefixtures("vllm_install")
def test_ngram_tunes_on_vllm(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    sets = [
        "speculative.mechanism=ngram",
        "speculative.draft_model=null",
        "tune.concurrency=[1]",
        "tune.draft_lens=[2]",
        "tune.prompts=2",
        "tune.repeats=1",
        "tune.output_len=16",
    ]
    run = _specdeploy(
        "tune", str(CPU), "--backend", "vllm", "--out", str(tmp_path), *[w for s in sets for w in ("--set", s)]
    )
    assert run.returncode == 0, run.stdout + run.stderr
    result = json.loads((tmp_path / CPU.stem / "tune" / "result.json").read_text())
    assert result["evidence"] == "measured" and result["backend"] == "vllm"
    assert result["setup"]["mechanism"] == "ngram" and result["fit"]["acceptance"]["source"].startswith("AL measured")
    schedule = result["schedule"]
    assert set(schedule["schedule"]) == {"1"} and schedule["schedule"]["1"] in (0, 2)
    assert not schedule["clamped"]  # vLLM's schedule has no TensorRT-LLM clamp
    e2e = [m["values"] for m in result["measurements"] if m["request"]["kind"] == "e2e"]
    assert e2e and all(v[name] is not None for v in e2e for name in MEASURED_KEYS)  # docs/design/metrics.md
