"""`build` without a GPU or TensorRT-LLM, and artifacts a CI job can diff and move (issue 16, items 2 and 5): a
`draft_len: auto` profile builds end to end with the performance model's schedule, labelled as predicted; a rebuild
of the unchanged profile leaves `git status` of the artifact clean; nothing names this machine's folders; serve.sh
finds the checkpoint on another host through $HF_HUB_CACHE.

A build that fetches runs in a subprocess (huggingface_hub reads its settings when first imported, and each of these
tests sets its own hub cache and token); the rest in process through `main` (tests.helpers.cli)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from tests.helpers import HUB_DRAFT_REV, HUB_TARGET_REV, cli, run_specdeploy


def git(folder: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(folder), "-c", "user.name=ci", "-c", "user.email=ci@example.com", *args],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def _deployable(art: Path) -> dict[str, str]:
    return {
        p.relative_to(art).as_posix(): p.read_text()
        for p in sorted(art.rglob("*"))
        if p.is_file() and ".specdeploy" not in p.parts and ".git" not in p.parts and p.suffix != ".png"
    }


def test_a_gpu_less_build_predicts_labels_and_rebuilds_byte_identically(tmp_path: Path, hub: tuple) -> None:
    profile, env = hub
    out = tmp_path / "artifacts"
    first = run_specdeploy("build", str(profile), "--out", str(out), env=env)
    assert first.returncode == 0, first.stderr  # no TensorRT-LLM, no GPU: still builds, emits and renders
    assert "tune.draft_len: warning: TensorRT-LLM is not installed: the performance model PREDICTS" in first.stderr
    assert "check.triton         built" in first.stderr
    art = out / "auto"
    options = (art / "llm_api_options.yaml").read_text()
    assert "# draft_len_schedule: PREDICTED by the performance model" in options and "draft_len_schedule:" in options
    assert "speculative_model_dir: acme/llama-small" in options and f"pins {HUB_DRAFT_REV}" in options
    lock = json.loads((art / "specdeploy.lock").read_text())
    assert lock["tuned"]["evidence"] == "predicted" and lock["tuned"]["backend"] == "model"
    manifest = json.loads((art / "manifest.json").read_text())
    tuned = next(s for s in manifest["steps"] if s["id"] == "tune.draft_len")
    assert tuned["outputs"]["evidence"] == "predicted"
    # nothing in the deployable files names this machine's folders (HF snapshot, --out, logs)
    for rel, text in _deployable(art).items():
        assert str(tmp_path) not in text, rel
    assert manifest["models"]["target"]["path"] == f"${{HF_HUB_CACHE}}/models--acme--llama/snapshots/{HUB_TARGET_REV}"
    # a rebuild of the unchanged profile writes the same bytes: git sees nothing
    git(art, "init", "-q")
    git(art, "add", "-A")
    git(art, "commit", "-qm", "first build")
    assert ".specdeploy" not in git(art, "ls-files")  # host-local build state stays out (.gitignore)
    second = run_specdeploy("build", str(profile), "--out", str(out), env=env)
    assert second.returncode == 0, second.stderr
    assert git(art, "status", "--porcelain") == ""
    assert json.loads((art / ".specdeploy" / "run.json").read_text())["invocation_id"]  # run metadata kept apart


def test_the_artifact_moves_to_a_serving_host(tmp_path: Path, hub: tuple) -> None:
    """serve.sh on another host: the artifact folder elsewhere, the hub cache elsewhere, trtllm-serve a double
    at the process boundary that prints what it was asked to serve."""
    profile, env = hub
    assert (
        run_specdeploy(
            "build",
            str(profile),
            "--out",
            str(tmp_path / "a"),
            "--only",
            "fetch",
            "--only",
            "tune",
            "--only",
            "emit",
            env=env,
        ).returncode
        == 0
    )
    host = tmp_path / "host"
    shutil.copytree(tmp_path / "a" / "auto", host / "deploy")
    shutil.copytree(tmp_path / "hub", host / "cache")
    bin_dir = host / "bin"
    bin_dir.mkdir()
    (bin_dir / "trtllm-serve").write_text('#!/bin/sh\necho "cwd=$PWD model=$1"\n')
    (bin_dir / "trtllm-serve").chmod(0o755)
    served = subprocess.run(
        [str(host / "deploy" / "serve.sh")],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": f"{bin_dir}:/usr/bin:/bin", "HF_HUB_CACHE": str(host / "cache")},
    ).stdout
    snapshot = host / "cache" / "models--acme--llama" / "snapshots" / HUB_TARGET_REV
    assert served.strip() == f"cwd={host / 'deploy'} model={snapshot}" and snapshot.is_dir()
    other = subprocess.run(
        [str(host / "deploy" / "serve.sh")],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": f"{bin_dir}:/usr/bin:/bin", "SPECDEPLOY_TARGET": "/models/llama"},
    ).stdout
    assert other.strip().endswith("model=/models/llama")


def test_emit_needs_no_fetched_checkpoint_and_a_tune_result_is_adopted(tmp_path: Path, hub: tuple) -> None:
    profile, env = hub
    fixed = cli(
        "build",
        str(profile),
        "--out",
        str(tmp_path / "fixed"),
        "--only",
        "emit.llm_api",
        "--set",
        "speculative.draft_len=3",
        env=env,
    )
    assert fixed.code == 0, fixed.err
    options = (tmp_path / "fixed" / "auto" / "llm_api_options.yaml").read_text()
    assert "speculative_model_dir: acme/llama-small" in options and "max_draft_len: 3" in options
    assert "fetch.target         not-selected" in fixed.err or "fetch.target" not in fixed.err
    # the tune a user ran into the same folder is the schedule the build emits (same profile hash)
    out = tmp_path / "tuned"
    tuned = cli("--json", "tune", str(profile), "--backend", "model", "--out", str(out), env=env)
    assert tuned.code == 0, tuned.err
    built = run_specdeploy("build", str(profile), "--out", str(out), env=env)
    assert built.returncode == 0, built.stderr
    assert "tune.draft_len: adopted tune/result.json (predicted by the model backend)" in built.stderr
    assert " predicted " not in built.stderr  # nothing re-tuned
    lock = json.loads((out / "auto" / "specdeploy.lock").read_text())["tuned"]
    assert lock["schedule"] == json.loads(tuned.out)["schedule"]["schedule"] and lock["adopted"] is True
    changed = run_specdeploy("build", str(profile), "--out", str(out), "--set", "tune.concurrency=[1,2,4]", env=env)
    assert changed.returncode == 0 and "adopted" not in changed.stderr  # another profile: tuned afresh


def test_a_fixed_k_rebuild_is_byte_identical_too(tmp_path: Path, hub: tuple) -> None:
    """No tune at all: the manifest alone used to differ (generated_at, invocation_id, durations, statuses)."""
    profile, env = hub
    out = tmp_path / "artifacts"
    built = run_specdeploy("build", str(profile), "--out", str(out), "--set", "speculative.draft_len=3", env=env)
    assert built.returncode == 0
    art = out / "auto"
    git(art, "init", "-q")
    git(art, "add", "-A")
    git(art, "commit", "-qm", "first build")
    again = run_specdeploy("build", str(profile), "--out", str(out), "--set", "speculative.draft_len=3", env=env)
    assert again.returncode == 0 and "emit.llm_api         reused" in again.stderr
    assert git(art, "status", "--porcelain") == ""


def test_dry_run_shows_the_files_it_would_write(tmp_path: Path, hub: tuple) -> None:
    profile, env = hub
    out = tmp_path / "artifacts"
    shown = cli("build", str(profile), "--out", str(out), "--dry-run", env=env)
    assert shown.code == 0, shown.err
    assert "--- llm_api_options.yaml (would be written) ---" in shown.out and "--- serve.sh" in shown.out
    assert "tune.draft_len decides max_draft_len and draft_len_schedule (K = 1.." in shown.out
    assert "writes llm_api_options.yaml, serve.sh" in shown.out and "manifest.json" in shown.out
    data = json.loads(cli("build", str(profile), "--out", str(out), "--dry-run", "--json", env=env).out)
    assert "speculative_model_dir: acme/llama-small" in data["files"]["llm_api_options.yaml"]
    assert f"models--acme--llama/snapshots/{HUB_TARGET_REV}" not in data["files"]["serve.sh"]  # nothing fetched yet
    assert not out.exists()
