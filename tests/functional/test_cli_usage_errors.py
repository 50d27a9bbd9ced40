"""Usage errors say what is wrong and how to fix it (exit 2, never a traceback): options a command refuses, and
combinations that cannot work. In process, as `main` runs for a user: exit code, stdout, stderr."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import cli


@pytest.mark.parametrize("selector", [("--only", "nosuch"), ("--from", "rendr")])
def test_dry_run_refuses_a_selector_the_build_would_refuse(tmp_path: Path, selector: tuple[str, str]) -> None:
    code, _, err = cli("build", "h100-ngram", "--out", str(tmp_path), "--dry-run", *selector)
    # it printed the whole plan and exited 0; the real build then exits 2 on the same line
    assert code == 2 and f"no step or stage '{selector[1]}' in this plan" in err, err
    assert not any(tmp_path.iterdir())


def test_a_negative_lock_timeout_is_a_usage_error(tmp_path: Path) -> None:
    code, _, err = cli("build", "h100-ngram", "--out", str(tmp_path), "--lock-timeout", "-5")
    assert code == 2 and "--lock-timeout" in err and ">=0" in err.replace(" ", ""), err  # it meant "wait forever"


def test_json_locates_an_unknown_option() -> None:
    code, out, _ = cli("plan", "h100-ngram", "--bogus", "--json")
    error = json.loads(out)["error"]
    assert code == 2 and error["location"] == {"option": "--bogus"}  # it was null; docs/cli.md: "or the `option`"


def test_ask_with_url_but_no_model_names_what_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = cli("ask", "hi", "--url", "127.0.0.1:1")
    # it said "no running `specdeploy serve` recorded under ." and to "pass --url HOST:PORT --model NAME"
    assert code == 2 and "--url needs --model" in err, err


def test_tune_backend_trtllm_without_tensorrt_llm_says_so(tmp_path: Path) -> None:
    from specdeploy.execute.needs import installed_trtllm

    if installed_trtllm() is not None:
        pytest.skip("TensorRT-LLM is installed here")
    code, _, err = cli("tune", "h100-ngram", "--backend", "trtllm", "--out", str(tmp_path))
    # it ran the acceptance subprocess twice and said "the acceptance run failed twice: nothing to predict from"
    assert code == 1 and "--backend trtllm needs TensorRT-LLM 1.2.1, which is not installed here" in err, err
    assert "pip install" in err and not (tmp_path / "h100-ngram" / "tune").exists()


def test_tune_backend_reference_on_a_gpu_profile_is_a_usage_error(tmp_path: Path) -> None:
    code, _, err = cli("tune", "h100-ngram", "--backend", "reference", "--out", str(tmp_path))
    # it said "unknown model reference 'Qwen/Qwen3-8B'" and to use SmolLM2
    assert code == 2 and "--backend reference runs the CPU reference runtime" in err, err


def test_render_target_refusal_names_the_option_not_deploy_targets() -> None:
    code, _, err = cli("render", "cpu-smollm2", "--target", "k8s", "--pretend")
    # it said "deploy.targets: ..." and "remove deploy.targets", which the profile does not set
    assert code == 2 and "--target: deploy targets serve the llmapi Triton layout" in err, err
    assert "remove deploy.targets" not in err
    assert "cpu-smollm2.yaml: deploy.gpus_per_node: the node size" in err  # the profile's issues: in the profile
