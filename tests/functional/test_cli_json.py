"""--json where users put it, and one JSON document on stdout even when the command fails (issue 16, item 3)."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest

from specdeploy.cli import cli as group
from tests.helpers import cli


def _commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], click.Command]]:
    rows: list[tuple[tuple[str, ...], click.Command]] = []
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        rows.append(((*prefix, name), command))
        if isinstance(command, click.Group):
            rows.extend(_commands(command, (*prefix, name)))
    return rows


def test_every_command_accepts_json_and_debug_after_its_name() -> None:
    missing = [
        " ".join(path)
        for path, command in _commands(group)
        if not {"--json", "--debug"} <= {o for p in command.params for o in getattr(p, "opts", [])}
    ]
    assert not missing


def test_json_after_the_command_is_the_same_document() -> None:
    before = cli("--json", "plan", "h100-ngram")
    after = cli("plan", "h100-ngram", "--json")
    assert before.code == after.code == 0, after.err
    assert json.loads(after.out) == json.loads(before.out)
    assert json.loads(cli("profiles", "list", "--json").out)[0]["name"]


def test_a_profile_error_is_a_located_json_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("target: {model: m}\nspeculative: {mechanism: eagle-3}\n")
    code, out, _ = cli("plan", str(bad), "--json")
    assert code == 2
    error = json.loads(out)["error"]
    assert error["code"] == 2 and error["message"] == "1 error in profile"
    assert error["location"] == {"file": str(bad), "line": 2, "col": 15, "path": "speculative.mechanism"}
    assert "unknown mechanism 'eagle-3'" in error["issues"][0]["message"]


def test_usage_errors_and_failed_results_are_json_too(tmp_path: Path) -> None:
    wrong = cli("tune", "h100-ngram", "--backend", "bogus", "--json")  # click fails before it reaches --json
    assert wrong.code == 2
    assert json.loads(wrong.out)["error"]["location"] == {"option": "--backend"}
    bad = tmp_path / "bad.yaml"
    bad.write_text("target: {model: m, quantisation: fp8}\n")
    failed = json.loads(cli("validate", "h100-ngram", str(bad), "--json").out)  # a result, then a failure
    assert failed["error"]["code"] == 2 and [r["ok"] for r in failed["result"]] == [True, False]
    assert failed["error"]["location"] == {"file": str(bad), "line": 1, "col": 20, "path": "target.quantisation"}
    missing = cli("--json", "check-repo", str(tmp_path / "nope"))
    assert missing.code == 2 and "is not a folder" in json.loads(missing.out)["error"]["message"]


def test_plan_json_has_values_with_sources_and_advice_records() -> None:
    plan = json.loads(cli("plan", "h200-eagle3", "--set", "serving.max_batch_size=32", "--json").out)
    values = {v["path"]: v for v in plan["values"]}
    assert values["serving.max_batch_size"] == {"path": "serving.max_batch_size", "value": 32, "source": "--set"}
    assert values["speculative.mechanism"]["source"].endswith("h200-eagle3.yaml:11")
    assert values["hardware.count"]["source"] == "default"
    records = plan["advice"]
    assert {r["guideline"] for r in records} >= {"G1", "G2", "G3", "G4", "G5", "schedule"}
    g4 = next(r for r in records if r["guideline"] == "G4" and r["concurrency"] == 1)
    assert isinstance(g4["k"], int) and {"gain", "cost"} <= set(g4["numbers"])
    assert all(r["source"] == "performance model (predicted)" for r in records)


def test_a_reader_that_left_is_not_a_failure() -> None:
    """`specdeploy mechanisms | head -1`: stdout's reader is gone before the result is written. Exit 0 and
    quiet, with or without --json (click turned the EPIPE into exit 1, 'a step failed'). A subprocess: the pipe."""
    import os
    import subprocess
    import sys

    for args in (["mechanisms"], ["mechanisms", "--json"]):
        proc = subprocess.Popen(
            [sys.executable, "-m", "specdeploy", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "NO_COLOR": "1"},
        )
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()  # the reader leaves before anything is written
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=120) == 0, err
        assert "Traceback" not in err and "error" not in err


def test_a_name_the_os_refuses_is_a_usage_error_everywhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A path argument longer than the OS allows (ENAMETOOLONG) is the user's input, never an internal error:
    exit 2 naming the problem, and a JSON error with --json."""
    monkeypatch.chdir(tmp_path)
    long = "y" * 5000
    for args in (
        ("validate", long),
        ("plan", f"{long}.yaml"),
        ("check-repo", long),
        ("render", "h100-ngram", "--out", long),
        ("ask", "hi", "--artifact", long),
    ):
        code, out, err = cli(*args, "--json")
        assert code == 2, (args[0], err[-500:])
        error = json.loads(out)["error"]
        assert error["code"] == 2 and "name too long" in error["message"] and "internal error" not in err


def test_render_and_check_repo_results_carry_a_schema_version(tmp_path: Path) -> None:
    """Their documents are versioned as the manifest is, so a CI script can tell a format it does not read."""
    rendered = cli("render", "h100-ngram", "--out", str(tmp_path / "artifacts"), "--json")
    assert rendered.code == 0, rendered.err
    assert json.loads(rendered.out)["schema_version"] == 1
    repo = tmp_path / "artifacts" / "h100-ngram" / "triton"  # --out is the artifacts root, as for build and tune
    checked = json.loads(cli("check-repo", str(repo), "--json").out)
    assert checked == {"schema_version": 1, "repo": str(repo), "issues": []}


def test_plan_json_names_the_engine_and_its_release_line() -> None:
    """The resolved facts (also the manifest's) name the profile's engine with its own release line: a vLLM
    profile's line is a vLLM release, not a TensorRT-LLM one."""
    for profile, engine, line in (("h200-eagle3", "pytorch", "1.2"), ("h100-vllm-eagle3", "vllm", "0.32")):
        resolved = json.loads(cli("plan", profile, "--json").out)["resolved"]
        assert (resolved["engine"], resolved["release_line"]) == (engine, line)
        assert "trtllm_line" not in resolved
