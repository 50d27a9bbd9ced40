"""A third-party mechanism and a third-party engine (packages under tests/fixtures/third_party, each with its own
entry point) go through specdeploy with no edit under specdeploy/: the mechanism through validate, plan,
`build --only emit/render/check` and `check-repo` on both TensorRT-LLM lines; the engine through validate, plan
and its emit step."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import LLAMA_31_8B_CONFIG, local_model, pip_install_into, write_profile

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "third_party"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Both fixture packages installed as a user would (pip, from their folders) into one extra site folder."""
    target = tmp_path_factory.mktemp("site")
    for package in ("mechanism", "engine"):
        pip_install_into(target, str(FIXTURES / package))
    return target


def specdeploy(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site), "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "specdeploy", *args], capture_output=True, text=True, env=env, timeout=300
    )


def _profile(tmp_path: Path, **over: object) -> Path:
    model = local_model(tmp_path / "llama", LLAMA_31_8B_CONFIG)
    (model / "model.safetensors").write_bytes(b"w" * 4096)
    data: dict[str, object] = {
        "target": {"model": str(model), "dtype": "bfloat16"},
        "hardware": {"gpu": "h200"},
        "serving": {"max_batch_size": 16, "max_seq_len": 4096, "streaming": False},
        **over,
    }
    return write_profile(tmp_path / "third.yaml", data)


@pytest.mark.parametrize("release", ["1.2.1", "1.3.0"])
def test_a_third_party_mechanism_emits_renders_and_checks(site: Path, tmp_path: Path, release: str) -> None:
    profile = _profile(
        tmp_path, runtime={"trtllm_version": release}, speculative={"mechanism": "lookup", "draft_len": 4}
    )
    assert specdeploy(site, "validate", str(profile)).returncode == 0
    planned = specdeploy(site, "plan", str(profile))
    assert planned.returncode == 0 and "emit.llm_api" in planned.stdout, planned.stderr
    out = tmp_path / "artifacts"
    built = specdeploy(
        site, "build", str(profile), "--out", str(out), "--only", "emit", "--only", "render", "--only", "check"
    )
    assert built.returncode == 0, built.stderr
    options = (out / "third" / "llm_api_options.yaml").read_text()
    assert "decoding_type: NGram" in options and "max_matching_ngram_size: 6" in options
    assert "disable_overlap_scheduler: true" in options  # the plugin's overlap declaration
    model_yaml = (out / "third" / "triton" / "tensorrt_llm" / "1" / "model.yaml").read_text()
    assert "max_matching_ngram_size: 6" in model_yaml
    checked = specdeploy(site, "check-repo", str(out / "third" / "triton"))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    listed = specdeploy(site, "mechanisms", "--json")
    assert '"lookup"' in listed.stdout and "NGram" in listed.stdout


def test_a_third_party_mechanism_emits_for_vllm(site: Path, tmp_path: Path) -> None:
    profile = _profile(
        tmp_path,
        runtime={"backend": "vllm", "vllm_version": "0.32.0"},
        speculative={"mechanism": "lookup", "draft_len": 4},
    )
    assert specdeploy(site, "validate", str(profile)).returncode == 0
    planned = specdeploy(site, "plan", str(profile))
    assert planned.returncode == 0 and "emit.vllm" in planned.stdout and "vLLM line 0.32" in planned.stdout, (
        planned.stderr
    )
    out = tmp_path / "artifacts"
    built = specdeploy(site, "build", str(profile), "--out", str(out), "--only", "emit")
    assert built.returncode == 0, built.stderr
    spec = json.loads((out / "third" / "speculative_config.json").read_text())
    assert spec == {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 6, "prompt_lookup_min": 2}
    assert "lookup" in specdeploy(site, "mechanisms").stdout


def test_a_third_party_mechanism_is_refused_where_it_declares_nothing(site: Path, tmp_path: Path) -> None:
    profile = _profile(tmp_path, runtime={"backend": "tensorrt"}, speculative={"mechanism": "lookup", "draft_len": 4})
    refused = specdeploy(site, "validate", str(profile))
    assert refused.returncode == 2 and "lookup does not run on backend 'tensorrt'" in refused.stderr


def test_a_third_party_engine_validates_plans_and_emits(site: Path, tmp_path: Path) -> None:
    profile = _profile(tmp_path, runtime={"backend": "toy"})
    assert specdeploy(site, "validate", str(profile)).returncode == 0
    planned = specdeploy(site, "plan", str(profile))
    assert planned.returncode == 0 and "emit.toy" in planned.stdout, planned.stderr
    out = tmp_path / "artifacts"
    built = specdeploy(site, "build", str(profile), "--out", str(out), "--only", "emit")
    assert built.returncode == 0, built.stderr
    assert "exec toy-serve" in (out / "third" / "toy-serve.sh").read_text()
    unknown = specdeploy(site, "validate", str(_profile(tmp_path, runtime={"backend": "toi"})))
    assert unknown.returncode == 2 and "did you mean 'toy'" in unknown.stderr
