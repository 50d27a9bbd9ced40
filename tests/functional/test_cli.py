"""The CLI end to end: exit codes, --json, profiles, doctor. In process through `main` (tests.helpers.cli); in a
subprocess where the process is what is under test: the exit codes a shell sees, and what a command imports."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from specdeploy.profile.shipped import shipped_profiles
from tests.helpers import cli, run_specdeploy


def test_help_lists_commands_and_exit_codes() -> None:
    code, out, _ = cli("--help")
    assert code == 0
    for command in ("validate", "plan", "profiles", "doctor", "mechanisms"):
        assert command in out
    assert "Exit codes: 0 ok, 1 a step failed, 2 invalid profile or usage, 3 internal error" in out


def test_validate_ok_and_invalid_exit_codes(tmp_path: Path) -> None:
    """In a subprocess: the exit codes 0 and 2 as a shell sees them."""
    assert run_specdeploy("validate", "h200-eagle3").returncode == 0
    bad = tmp_path / "bad.yaml"
    bad.write_text("target: {model: m}\nspeculative: {mechanism: eagle-3}\n")
    result = run_specdeploy("validate", str(bad))
    assert result.returncode == 2
    assert f"{bad}:2:15 speculative.mechanism: unknown mechanism 'eagle-3'" in result.stderr
    assert "Traceback" not in result.stderr


def test_validate_json_reports_every_profile(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("target: {model: m, quantisation: fp8}\n")
    code, out, _ = cli("--json", "validate", "h100-ngram", str(bad))
    assert code == 2
    report = json.loads(out)["result"]  # a failure: {"error": ..., "result": ...}
    assert [r["ok"] for r in report] == [True, False]
    assert report[1]["errors"][0]["path"] == "target.quantisation" and report[1]["errors"][0]["line"] == 1


def test_plan_prints_sources_facts_fit_and_steps() -> None:
    code, out, err = cli("plan", "h200-eagle3", "--set", "serving.max_batch_size=32")
    assert code == 0, err
    assert "serving.max_batch_size" in out and "--set" in out
    assert "G = 4" in out and "ridge 206 FLOP/byte" in out and "fit     per GPU" in out
    assert "emit.llm_api" in out and "render.triton" in out


def test_plan_json_is_a_serializable_plan() -> None:
    code, out, err = cli("--json", "plan", "l40s-medusa-engine")
    assert code == 0, err
    plan = json.loads(out)
    assert plan["schema_version"] == 1 and plan["profile"] == "l40s-medusa-engine"
    ids = [s["id"] for s in plan["steps"]]
    assert ids[0] == "fetch.target" and ids[-1] == "check.triton"
    assert plan["resolved"]["gpu"] == "l40s"


def test_unknown_set_key_is_usage_error() -> None:
    code, _, err = cli("plan", "h200-eagle3", "--set", "servng.max_batch_size=3")
    assert code == 2 and "did you mean 'serving'" in err


def test_profiles_list_show_copy(tmp_path: Path) -> None:
    listed = cli("--json", "profiles", "list")
    names = {row["name"] for row in json.loads(listed.out)}
    assert names == set(shipped_profiles())
    shown = cli("profiles", "show", "cpu-smollm2")
    assert "backend: reference" in shown.out
    assert cli("profiles", "copy", "h100-ngram", str(tmp_path)).code == 0
    assert (tmp_path / "h100-ngram.yaml").read_text() == shipped_profiles()["h100-ngram"].read_text()
    again = cli("profiles", "copy", "h100-ngram", str(tmp_path))
    assert again.code == 2 and "exists" in again.err
    assert cli("profiles", "show", "nope").code == 2


def test_doctor_says_plainly_what_is_missing() -> None:
    code, out, _ = cli("--json", "doctor")
    doc = json.loads(out)
    report = doc.get("result", doc)  # a failure carries the report as its result
    assert report["specdeploy"] and "nvml" in report
    assert next(iter(report)) == "schema_version" and report["schema_version"] == 1  # versioned like the manifest
    assert code == (1 if report["missing"] else 0)  # exit 1: GPU builds cannot run here
    if not report["gpus"]:
        assert report["nvml"] == "no NVIDIA driver found (NVML library not found)"
        assert report["driver"] == "no NVIDIA driver" and "NVIDIA GPU" in report["missing"]
        assert doc["error"]["code"] == 1 and "GPU builds cannot run here" in doc["error"]["message"]
        text = cli("doctor").out
        assert "None" not in text and "gpus               none" in text
    if "not installed" in report["tensorrt_llm"]:
        assert "https://pypi.nvidia.com" in report["tensorrt_llm"] and "TensorRT-LLM" in report["missing"]


def test_mechanisms_matrix() -> None:
    rows = {r["name"]: r for r in json.loads(cli("--json", "mechanisms").out)}
    assert rows["medusa"]["support"] == {"tensorrt": ["1.2"]}
    assert rows["dflash"]["support"] == {"pytorch": ["1.3"]}
    assert "reference" in rows["ngram"]["support"]
    assert rows["suffix"]["support"] == {"vllm": ["0.32"]}
    assert "draft_len caps a variable draft" in rows["suffix"]["summary"]


@pytest.mark.parametrize("name", sorted(shipped_profiles()))
def test_every_shipped_profile_validates_and_plans(name: str) -> None:
    code, out, err = cli("--json", "plan", name)
    assert code == 0, err
    assert json.loads(out)["steps"]


HEAVY = (
    "torch",
    "transformers",
    "tensorrt_llm",
    "vllm",
    "huggingface_hub",
    "pynvml",
    "jinja2",
    "matplotlib",
    "tritonclient",
    "ray",
)


def _imported_by(args: list[str], modules: tuple[str, ...]) -> str:
    """Which of `modules` the CLI imported running `args`, as the line `IMPORTED [...]` on stderr."""
    code = (
        "import sys, runpy\nsys.argv = ['specdeploy', *sys.argv[1:]]\n"
        "try:\n    runpy.run_module('specdeploy', run_name='__main__')\nexcept SystemExit:\n    pass\n"
        f"print('IMPORTED', sorted(m for m in {modules!r} if m in sys.modules), file=sys.stderr)\n"
    )
    result = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60)
    return result.stderr


@pytest.mark.parametrize(
    "args", [["--help"], ["validate", "h200-eagle3"], ["plan", "h200-eagle3"], ["plan", "cpu-smollm2"]]
)
def test_fast_paths_import_nothing_heavy(args: list[str]) -> None:
    stderr = _imported_by(args, HEAVY)
    assert "IMPORTED []" in stderr, stderr[-500:]


def test_help_does_not_import_the_profile_models() -> None:
    """pydantic is the validator of the commands that read a profile, not of `--help`."""
    assert "IMPORTED []" in _imported_by(["--help"], ("pydantic",))


COMMAND_MODULES = tuple(f"specdeploy.cli.{m}" for m in ("core", "build", "render", "serve", "tune"))


@pytest.mark.parametrize(
    ("args", "imported"),
    [(["--help"], []), (["validate", "h200-eagle3"], ["core"]), (["check-repo", "--help"], ["render"])],
)
def test_a_command_imports_only_its_own_module(args: list[str], imported: list[str]) -> None:
    """`--help` lists the commands without importing them; a command imports its module alone."""
    stderr = _imported_by(args, COMMAND_MODULES)
    assert f"IMPORTED {[f'specdeploy.cli.{m}' for m in imported]}" in stderr, stderr[-500:]


def test_the_cli_guide_names_the_commands_that_take_set() -> None:
    """docs/cli.md names them (doctor, verify, serve, ask, check-repo take no profile)."""
    import re

    import click

    from specdeploy.cli import cli

    guide = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text()
    named = re.search(r"The commands that\s+take a profile \(([^)]*)\) accept\s+`--set", guide)
    assert named is not None
    ctx = click.Context(cli)
    commands = [(name, cli.get_command(ctx, name)) for name in cli.list_commands(ctx)]
    with_set = {name for name, command in commands if command and any(p.name == "sets" for p in command.params)}
    assert set(re.findall(r"`([a-z-]+)`", named[1])) == with_set
