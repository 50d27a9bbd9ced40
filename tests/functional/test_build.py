"""`specdeploy build` and `verify` end to end, in process through `main` (tests.helpers.cli); in a subprocess for the
exit code a shell sees, and for builds that fetch from the hub cache (huggingface_hub reads its settings when first
imported, and each of these tests sets its own hub cache and token)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.helpers import (
    LLAMA_31_8B_CONFIG,
    cli,
    hub_cache_model,
    local_model,
    run_specdeploy,
    tiny_llama_profile,
    write_profile,
)

TOKEN = "hf_SECRETtokenXYZ0123456789"


def test_build_then_noop_rebuild_and_json_summary(tmp_path: Path) -> None:
    profile, out = tiny_llama_profile(tmp_path), tmp_path / "artifacts"
    first = cli("build", str(profile), "--out", str(out), "--only", "fetch", "--only", "emit")
    assert first.code == 0, first.err
    art = out / "tiny"
    options = (art / "llm_api_options.yaml").read_text()
    assert "decoding_type: NGram" in options and "disable_overlap_scheduler: true" in options
    assert "trtllm-serve" in (art / "serve.sh").read_text() and os.access(art / "serve.sh", os.X_OK)
    assert "emit.llm_api         built" in first.err
    again = cli("build", str(profile), "--out", str(out), "--only", "fetch", "--only", "emit", "--json")
    summary = json.loads(again.out)
    assert again.code == 0 and summary["ok"]
    assert {s["id"]: s["status"] for s in summary["steps"]}["emit.llm_api"] == "reused"
    changed = cli("build", str(profile), "--out", str(out), "--only", "emit", "--set", "speculative.draft_len=2")
    assert re.search(
        r"emit.llm_api         rebuilt in \d+\.\d s \(reason: profile speculative.draft_len changed\)", changed.err
    )
    manifest = json.loads((art / "manifest.json").read_text())
    assert manifest["schema_version"] == 2 and manifest["models"]["target"]["kind"] == "local"
    assert cli("verify", str(art)).code == 0
    verified = json.loads(cli("verify", str(art), "--json").out)  # versioned like the manifest
    assert list(verified) == ["schema_version", "artifact_dir", "checked", "drift", "problems", "ok"]
    assert verified["schema_version"] == 1 and verified["ok"] and verified["checked"] > 0
    (art / "serve.sh").write_text("#!/bin/sh\necho tampered\n")
    drift = cli("verify", str(art))
    assert drift.code == 1 and "drift: serve.sh" in drift.out


def test_dry_run_prints_the_plan_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "artifacts"
    code, stdout, _ = cli("build", str(tiny_llama_profile(tmp_path)), "--out", str(out), "--dry-run", "--json")
    assert code == 0
    assert [s["id"] for s in json.loads(stdout)["steps"]][:2] == ["fetch.target", "emit.llm_api"]
    assert not out.exists()


def test_engine_build_without_trtllm_says_how_to_install(tmp_path: Path) -> None:
    """In a subprocess: exit 1 as a shell sees it."""
    profile = tiny_llama_profile(
        tmp_path,
        runtime={"trtllm_version": "1.2.1", "backend": "tensorrt"},
        speculative={"mechanism": "lookahead", "draft_len": 15},
        triton={"layout": "engine"},
    )
    result = run_specdeploy(
        "build",
        str(profile),
        "--out",
        str(tmp_path / "a"),
        "--only",
        "fetch",
        "--only",
        "convert",
        "--only",
        "engine",
        "--only",
        "emit",
    )
    assert result.returncode == 1
    assert "pip install tensorrt_llm==1.2.1 --extra-index-url https://pypi.nvidia.com" in result.stderr
    assert "emit.engine          skipped (dependency engine.target skipped)" in result.stderr
    assert "fetch.target         built" in result.stderr and "Traceback" not in result.stderr


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    profile = tiny_llama_profile(tmp_path)
    assert cli("build", str(profile), "--out", str(tmp_path), "--only", "nope").code == 2
    bad = write_profile(tmp_path / "bad.yaml", {"target": {"model": "m"}, "speculative": {"mechanism": "eagle-3"}})
    assert cli("build", str(bad)).code == 2
    assert cli("verify", str(tmp_path / "nothing-here")).code == 2
    assert cli("build", str(profile), "--out", str(tmp_path), "--tune").code == 2  # nothing to tune


def _hub_ngram_profile(tmp_path: Path, revision: str) -> tuple[Path, Path, Path]:
    """(hub cache, its snapshot of `acme/llama` at `revision`, an n-gram profile serving it)."""
    cache = tmp_path / "hub"
    snapshot = hub_cache_model(
        cache,
        "acme/llama",
        LLAMA_31_8B_CONFIG,
        revision=revision,
        files={"model.safetensors": b"w", "tokenizer.json": b"{}"},
    )
    profile = write_profile(
        tmp_path / "hub.yaml",
        {
            "target": {"model": "acme/llama"},
            "hardware": {"gpu": "h200"},
            "speculative": {"mechanism": "ngram", "draft_len": 3},
            "serving": {"max_batch_size": 8},
        },
    )
    return cache, snapshot, profile


def test_hf_token_never_printed_or_written(tmp_path: Path) -> None:
    cache, _, profile = _hub_ngram_profile(tmp_path, "d" * 40)
    env = {"HF_TOKEN": TOKEN, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
    result = run_specdeploy(
        "--debug", "build", str(profile), "--out", str(tmp_path / "a"), "--only", "fetch", "--only", "emit", env=env
    )
    assert result.returncode == 0, result.stderr
    assert TOKEN not in result.stdout + result.stderr
    for path in (tmp_path / "a").rglob("*"):
        if path.is_file():
            assert TOKEN.encode() not in path.read_bytes(), path
    lock = json.loads((tmp_path / "a" / "hub" / "specdeploy.lock").read_text())
    assert lock["models"]["target"]["revision"] == "d" * 40


def test_serve_sh_finds_a_relative_local_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`target.model: ./llama` resolved inside the artifact folder, where serve.sh runs, not where the model is."""
    model = local_model(tmp_path / "llama", LLAMA_31_8B_CONFIG)
    profile = write_profile(
        tmp_path / "rel.yaml",
        {
            "target": {"model": "./llama"},
            "hardware": {"gpu": "h200"},
            "speculative": {"mechanism": "ngram", "draft_len": 4},
        },
    )
    monkeypatch.chdir(tmp_path)
    code, _, err = cli("build", str(profile), "--out", "out", "--only", "fetch", "--only", "emit")
    assert code == 0, err
    art = tmp_path / "out" / "rel"
    bin_dir = tmp_path / "bin"  # a TEST DOUBLE of trtllm-serve: prints the folder and the model it was given
    bin_dir.mkdir()
    (bin_dir / "trtllm-serve").write_text('#!/bin/sh\necho "$PWD"\necho "$1"\n')
    (bin_dir / "trtllm-serve").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    env.pop("SPECDEPLOY_TARGET", None)
    served = subprocess.run(
        ["sh", str(art / "serve.sh")],
        capture_output=True,
        text=True,
        cwd=tmp_path / "bin",
        env=env,
        timeout=30,
        check=True,
    )
    cwd, target = served.stdout.splitlines()
    assert (Path(cwd) / target).resolve() == model.resolve()  # whatever folder serve.sh is started from


def test_build_renders_the_deploy_targets_the_profile_names(tmp_path: Path) -> None:
    profile = tiny_llama_profile(
        tmp_path,
        hardware={"gpu": "h200", "count": 16, "tensor_parallel": 8, "pipeline_parallel": 2},
        deploy={"targets": ["container", "k8s", "slurm"], "name": "tiny-llama"},
    )
    out = tmp_path / "artifacts"
    done = cli("build", str(profile), "--out", str(out), "--json")
    assert done.code == 0, done.err
    steps = {s["id"]: s["status"] for s in json.loads(done.out)["steps"]}
    assert steps["render.deploy"] == "built"
    deploy = out / "tiny" / "deploy"
    assert (deploy / "k8s" / "leaderworkerset.yaml").is_file() and (deploy / "slurm" / "sbatch.sh").is_file()
    assert "COPY triton/" in (deploy / "container" / "Dockerfile").read_text()
    assert cli("check-deploy", str(deploy)).code == 0
    assert cli("verify", str(out / "tiny")).code == 0


def test_llmapi_repository_loads_the_fetched_snapshot(tmp_path: Path) -> None:
    """The build renders model.yaml's `model:` as the folder it fetched (pinned by the snapshot it resolved)."""
    cache, snapshot, profile = _hub_ngram_profile(tmp_path, "e" * 40)
    env = {"HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
    steps = ("--only", "fetch", "--only", "emit", "--only", "render")
    result = run_specdeploy("build", str(profile), "--out", str(tmp_path / "a"), *steps, env=env)
    assert result.returncode == 0, result.stderr
    version = tmp_path / "a" / "hub" / "triton" / "tensorrt_llm" / "1"
    model_yaml = (version / "model.yaml").read_text()
    # relocatable: the snapshot under the serving host's hub cache, which the rendered model resolves
    assert f"model: ${{HF_HUB_CACHE}}/models--acme--llama/snapshots/{'e' * 40}\n" in model_yaml
    assert "revision:" not in model_yaml and str(tmp_path) not in model_yaml
    import importlib.util

    spec = importlib.util.spec_from_file_location("rendered_helpers", version / "helpers.py")
    assert spec is not None and spec.loader is not None
    helpers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(helpers)
    os.environ["HF_HUB_CACHE"] = str(cache)  # the test's isolation fixture restores it
    config, _ = helpers.load_model_yaml(str(version))
    assert Path(config["model"]) == snapshot


def test_dry_run_says_which_steps_only_would_run() -> None:
    code, out, _ = cli("build", "h100-ngram", "--dry-run", "--only", "render", "--json")
    assert code == 0 and json.loads(out)["selected"] == ["render.triton"]
    code, out, _ = cli("build", "h100-ngram", "--dry-run", "--from", "render.triton")
    assert code == 0 and "runs only: render.triton, check.triton" in out


def test_bench_sh_sits_next_to_the_yaml_with_its_dataset(tmp_path: Path) -> None:
    out = tmp_path / "artifacts"
    build = cli("build", str(tiny_llama_profile(tmp_path)), "--out", str(out), "--only", "fetch", "--only", "emit")
    assert build.code == 0, build.err
    art = out / "tiny"
    script = (art / "bench.sh").read_text()
    assert os.access(art / "bench.sh", os.X_OK) and 'cd "$(dirname "$0")"' in script
    assert "trtllm-bench" in script and "--dataset bench_dataset.jsonl" in script
    records = [json.loads(line) for line in (art / "bench_dataset.jsonl").read_text().splitlines()]
    assert len(records) == 32 and set(records[0]) == {"task_id", "prompt", "category", "output_tokens"}
    assert records[0]["output_tokens"] == 128
    assert "fetch.target         started: fetch " in build.err  # a long stage announces itself
