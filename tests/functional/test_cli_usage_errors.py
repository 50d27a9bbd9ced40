"""Defects a first-contact trial of the CLI found in build, its options and --json (each test failed before its
fix). In process, as `main` runs for a user: exit code, stdout, stderr."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import click
import pytest

from specdeploy.cli import main


def run_cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stderr(err), redirect_stdout(out), pytest.raises(SystemExit) as exit_info:
        main(list(args))
    return int(exit_info.value.code or 0), out.getvalue(), err.getvalue()


@pytest.mark.parametrize("selector", [("--only", "nosuch"), ("--from", "rendr")])
def test_dry_run_refuses_a_selector_the_build_would_refuse(tmp_path: Path, selector: tuple[str, str]) -> None:
    code, _, err = run_cli("build", "h100-ngram", "--out", str(tmp_path), "--dry-run", *selector)
    # it printed the whole plan and exited 0; the real build then exits 2 on the same line
    assert code == 2 and f"no step or stage '{selector[1]}' in this plan" in err, err
    assert not any(tmp_path.iterdir())


def test_dry_run_says_which_steps_only_would_run() -> None:
    code, out, _ = run_cli("build", "h100-ngram", "--dry-run", "--only", "render", "--json")
    assert code == 0 and json.loads(out)["selected"] == ["render.triton"]
    code, out, _ = run_cli("build", "h100-ngram", "--dry-run", "--from", "render.triton")
    assert code == 0 and "runs only: render.triton, check.triton" in out


def test_a_negative_lock_timeout_is_a_usage_error(tmp_path: Path) -> None:
    code, _, err = run_cli("build", "h100-ngram", "--out", str(tmp_path), "--lock-timeout", "-5")
    assert code == 2 and "--lock-timeout" in err and ">=0" in err.replace(" ", ""), err  # it meant "wait forever"


def test_json_locates_an_unknown_option() -> None:
    code, out, _ = run_cli("plan", "h100-ngram", "--bogus", "--json")
    error = json.loads(out)["error"]
    assert code == 2 and error["location"] == {"option": "--bogus"}  # it was null; docs/cli.md: "or the `option`"


def test_ask_with_url_but_no_model_names_what_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli("ask", "hi", "--url", "127.0.0.1:1")
    # it said "no running `specdeploy serve` recorded under ." and to "pass --url HOST:PORT --model NAME"
    assert code == 2 and "--url needs --model" in err, err


def test_the_readme_names_the_commands_that_take_set() -> None:
    """docs/cli.md names them (doctor, verify, serve, ask, check-repo take no profile)."""
    import re

    from specdeploy.cli import cli

    guide = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text()
    named = re.search(r"The commands that\s+take a profile \(([^)]*)\) accept\s+`--set", guide)
    assert named is not None
    ctx = click.Context(cli)
    commands = [(name, cli.get_command(ctx, name)) for name in cli.list_commands(ctx)]
    with_set = {name for name, command in commands if command and any(p.name == "sets" for p in command.params)}
    assert set(re.findall(r"`([a-z-]+)`", named[1])) == with_set


def test_tune_backend_trtllm_without_tensorrt_llm_says_so(tmp_path: Path) -> None:
    from specdeploy.execute.needs import installed_trtllm

    if installed_trtllm() is not None:
        pytest.skip("TensorRT-LLM is installed here")
    code, _, err = run_cli("tune", "h100-ngram", "--backend", "trtllm", "--out", str(tmp_path))
    # it ran the acceptance subprocess twice and said "the acceptance run failed twice: nothing to predict from"
    assert code == 1 and "--backend trtllm needs TensorRT-LLM 1.2.1, which is not installed here" in err, err
    assert "pip install" in err and not (tmp_path / "h100-ngram" / "tune").exists()


def test_tune_backend_reference_on_a_gpu_profile_is_a_usage_error(tmp_path: Path) -> None:
    code, _, err = run_cli("tune", "h100-ngram", "--backend", "reference", "--out", str(tmp_path))
    # it said "unknown model reference 'Qwen/Qwen3-8B'" and to use SmolLM2
    assert code == 2 and "--backend reference runs the CPU reference runtime" in err, err


def test_render_target_into_an_unusable_folder_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    code, _, err = run_cli("render", "h200-eagle3", "--target", "container", "--out", str(tmp_path / "file" / "x"))
    assert code == 2 and "cannot create the artifact folder" in err and "Traceback" not in err, err  # exit 3


def test_check_deploy_of_a_folder_without_deploy_files_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "README").write_text("not a deploy file\n")
    code, _, err = run_cli("check-deploy", str(tmp_path))  # "no problems", exit 0
    assert code == 2 and "holds no deploy files" in err, err


def test_render_target_says_which_checks_ran(tmp_path: Path) -> None:
    from specdeploy.deploy.check import tools_available

    if not tools_available():
        pytest.skip("the deploy extra is not installed")
    code, out, _ = run_cli("render", "h200-eagle3", "--target", "container", "--pretend", "--out", str(tmp_path))
    # it listed "Kubernetes 1.33 OpenAPI (strict), LeaderWorkerSet v1 CRD, shellcheck" for a lone Dockerfile
    assert code == 0 and "(checked: Dockerfile)" in out, out


def test_render_target_refusal_names_the_option_not_deploy_targets() -> None:
    code, _, err = run_cli("render", "cpu-smollm2", "--target", "k8s", "--pretend")
    # it said "deploy.targets: ..." and "remove deploy.targets", which the profile does not set
    assert code == 2 and "--target: deploy targets serve the llmapi Triton layout" in err, err
    assert "remove deploy.targets" not in err
    assert "cpu-smollm2.yaml: deploy.gpus_per_node: the node size" in err  # the profile's issues: in the profile


@pytest.mark.parametrize("command", [("profiles", "show", "h200-eagl"), ("profiles", "copy", "h200-eagl")])
def test_a_misspelt_shipped_name_is_suggested(tmp_path: Path, command: tuple[str, ...]) -> None:
    code, _, err = run_cli(*command, str(tmp_path)) if command[1] == "copy" else run_cli(*command)
    assert code == 2 and "hint: did you mean 'h200-eagle3'? (`specdeploy profiles list`)" in err, err


def test_profiles_copy_into_an_unusable_folder_names_the_fix(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    code, _, err = run_cli("profiles", "copy", "h100-ngram", str(tmp_path / "file" / "x"))
    assert code == 2 and "hint: DEST must be a folder (or a .yaml file) in a writable place" in err, err
