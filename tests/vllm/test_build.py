"""`specdeploy build` of the shipped CPU vLLM profile on the real vLLM: fetch (the shipped models, exported in
vLLM's layouts), emit, and the installed vLLM's own check of the written config, then verify."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from specdeploy.engines.vllm import env

ROOT = Path(__file__).resolve().parents[2]
CPU = ROOT / "profiles" / "cpu" / "cpu-smollm2-vllm.yaml"
FIXED = ("speculative.draft_len=3",)
"""The profile tunes its draft length (tests/vllm/test_tune.py builds it so); here one K, no tune."""
VARIANTS = {
    "ngram": (*FIXED, "speculative.mechanism=ngram", "speculative.draft_model=null"),
    "draft_model": (
        *FIXED,
        "speculative.mechanism=draft_target",
        "speculative.draft_model=specdeploy/smollm2-135m-drafter",
    ),
    "eagle3": FIXED,
}


def _specdeploy(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "specdeploy", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
        timeout=900,
    )


@pytest.mark.parametrize("method", VARIANTS)
def test_the_cpu_vllm_profile_builds_checked_by_vllm(
    vllm_install: env.VllmInstall, tmp_path: Path, method: str
) -> None:
    pytest.importorskip("torch")  # the shipped drafters are exported in specdeploy's environment
    sets = [word for s in VARIANTS[method] for word in ("--set", s)]
    built = _specdeploy("build", str(CPU), *sets, "--out", str(tmp_path))
    assert built.returncode == 0, built.stdout + built.stderr
    assert f"vLLM {vllm_install.version} accepts vllm-serve.yaml" in built.stdout + built.stderr
    art = tmp_path / "cpu-smollm2-vllm"
    config = yaml.safe_load((art / "vllm-serve.yaml").read_text())
    spec = config["speculative-config"]
    assert spec["method"] == method
    if method != "ngram":  # the drafter as vLLM loads it (export.py), not the reference runtime's folder
        assert (Path(spec["model"]) / "config.json").is_file() and "/vllm/" in spec["model"]
    assert (Path(config["model"]) / "model.safetensors").exists()
    assert _specdeploy("verify", str(art)).returncode == 0
