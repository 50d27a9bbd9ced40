"""`render --target` and `check-deploy` as a user runs them: exit codes and located errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import cli, run_specdeploy

MULTI = "h200-mtp-deepseek-v3-2node"


def test_render_targets_then_check_then_a_tampered_file_fails(tmp_path: Path) -> None:
    root = tmp_path / "artifacts"
    out = root / MULTI / "deploy"  # --out is the artifacts root, as for build
    done = run_specdeploy("render", MULTI, "--target", "k8s", "--target", "slurm", "--out", str(root))
    assert done.returncode == 0, done.stderr
    assert "create    k8s/leaderworkerset.yaml" in done.stdout and "shellcheck" in done.stdout
    again = run_specdeploy("render", MULTI, "--target", "k8s", "--target", "slurm", "--out", str(root), "--pretend")
    assert "identical k8s/leaderworkerset.yaml" in again.stdout
    assert run_specdeploy("check-deploy", str(out)).returncode == 0
    manifest = out / "k8s" / "leaderworkerset.yaml"
    manifest.write_text(manifest.read_text().replace("size: 2", "size: two"))
    (out / "slurm" / "sbatch.sh").write_text("#!/bin/bash\ncd $1\n")
    bad = run_specdeploy("check-deploy", str(out))
    assert bad.returncode == 1
    assert "leaderWorkerTemplate.size" in bad.stdout and "SC2086" in bad.stdout
    assert run_specdeploy("check-deploy", str(tmp_path / "nowhere")).returncode == 2


def test_undeployable_profiles_exit_2_with_the_location(tmp_path: Path) -> None:
    split = run_specdeploy(
        "render",
        MULTI,
        "--target",
        "k8s",
        "--set",
        "hardware.tensor_parallel=16",
        "--set",
        "hardware.pipeline_parallel=1",
        "--out",
        str(tmp_path / "x"),
    )
    assert split.returncode == 2 and "hardware.tensor_parallel" in split.stderr and not (tmp_path / "x").exists()
    profile = tmp_path / "p.yaml"
    profile.write_text(f"extends: {MULTI}\ndeploy:\n  name: Not_A_Name\n")
    bad = run_specdeploy("validate", str(profile))
    assert bad.returncode == 2 and f"{profile}:3:3 deploy.name" in bad.stderr, bad.stderr
    profile.write_text(f"extends: {MULTI}\nhardware:\n  tensor_parallel: 16\n  pipeline_parallel: 1\n")
    bad = run_specdeploy("validate", str(profile))
    assert bad.returncode == 2 and f"{profile}:3:3 hardware.tensor_parallel" in bad.stderr, bad.stderr


def test_render_target_says_which_checks_ran(tmp_path: Path) -> None:
    from specdeploy.deploy.check import tools_available

    if not tools_available():
        pytest.skip("the deploy extra is not installed")
    code, out, _ = cli("render", "h200-eagle3", "--target", "container", "--pretend", "--out", str(tmp_path))
    # it listed "Kubernetes 1.33 OpenAPI (strict), LeaderWorkerSet v1 CRD, shellcheck" for a lone Dockerfile
    assert code == 0 and "(checked: Dockerfile)" in out, out
