"""`render --target` and `check-deploy` through `main` as a user runs them: exit codes and located errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import cli

MULTI = "h200-mtp-deepseek-v3-2node"


def test_render_targets_then_check_then_a_tampered_file_fails(tmp_path: Path) -> None:
    root = tmp_path / "artifacts"
    out = root / MULTI / "deploy"  # --out is the artifacts root, as for build
    done = cli("render", MULTI, "--target", "k8s", "--target", "slurm", "--out", str(root))
    assert done.code == 0, done.err
    assert "create    k8s/leaderworkerset.yaml" in done.out and "shellcheck" in done.out
    again = cli("render", MULTI, "--target", "k8s", "--target", "slurm", "--out", str(root), "--pretend")
    assert "identical k8s/leaderworkerset.yaml" in again.out
    assert cli("check-deploy", str(out)).code == 0
    manifest = out / "k8s" / "leaderworkerset.yaml"
    manifest.write_text(manifest.read_text().replace("size: 2", "size: two"))
    (out / "slurm" / "sbatch.sh").write_text("#!/bin/bash\ncd $1\n")
    bad = cli("check-deploy", str(out))
    assert bad.code == 1
    assert "leaderWorkerTemplate.size" in bad.out and "SC2086" in bad.out
    assert cli("check-deploy", str(tmp_path / "nowhere")).code == 2


def test_undeployable_profiles_exit_2_with_the_location(tmp_path: Path) -> None:
    split = cli(
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
    assert split.code == 2 and "hardware.tensor_parallel" in split.err and not (tmp_path / "x").exists()
    profile = tmp_path / "p.yaml"
    profile.write_text(f"extends: {MULTI}\ndeploy:\n  name: Not_A_Name\n")
    bad = cli("validate", str(profile))
    assert bad.code == 2 and f"{profile}:3:3 deploy.name" in bad.err, bad.err
    profile.write_text(f"extends: {MULTI}\nhardware:\n  tensor_parallel: 16\n  pipeline_parallel: 1\n")
    bad = cli("validate", str(profile))
    assert bad.code == 2 and f"{profile}:3:3 hardware.tensor_parallel" in bad.err, bad.err


def test_render_target_says_which_checks_ran(tmp_path: Path) -> None:
    from specdeploy.deploy.check import tools_available

    if not tools_available():
        pytest.skip("the deploy extra is not installed")
    code, out, _ = cli("render", "h200-eagle3", "--target", "container", "--pretend", "--out", str(tmp_path))
    # it listed "Kubernetes 1.33 OpenAPI (strict), LeaderWorkerSet v1 CRD, shellcheck" for a lone Dockerfile
    assert code == 0 and "(checked: Dockerfile)" in out, out
