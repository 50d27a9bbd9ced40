"""Small things users hit (issue 16, item 9): pretend writes nothing, copy into a folder, bench.sh beside its
dataset, a standalone render of `draft_len: auto` says which K it serves, profile names complete in the shell."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from specdeploy.profile.shipped import shipped_profiles
from tests.functional.test_build import _profile
from tests.functional.test_cli import run


def test_render_pretend_creates_no_folder(tmp_path: Path) -> None:
    result = run("render", "h100-ngram", "--pretend", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "would write" in result.stdout and list(tmp_path.iterdir()) == []


def test_profiles_copy_into_a_new_folder(tmp_path: Path) -> None:
    result = run("profiles", "copy", "h100-ngram", "mine/", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "mine" / "h100-ngram.yaml").read_text() == shipped_profiles()["h100-ngram"].read_text()
    assert run("profiles", "copy", "h100-ngram", "other.yaml", cwd=tmp_path).returncode == 0
    assert (tmp_path / "other.yaml").is_file()


def test_standalone_render_of_auto_says_which_k_it_serves(tmp_path: Path) -> None:
    result = run("render", "h200-eagle3", "--pretend", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "warning: speculative.draft_len is auto, which only a tune decides" in result.stderr
    (warning,) = json.loads(result.stdout)["warnings"]
    assert "serves a fixed K = " in warning and "specdeploy build" in warning
    fixed = run("render", "h200-eagle3", "--pretend", "--set", "speculative.draft_len=3", cwd=tmp_path)
    assert fixed.returncode == 0 and "warning" not in fixed.stderr


def test_bench_sh_sits_next_to_the_yaml_with_its_dataset(tmp_path: Path) -> None:
    out = tmp_path / "artifacts"
    build = run("build", str(_profile(tmp_path)), "--out", str(out), "--only", "fetch", "--only", "emit")
    assert build.returncode == 0, build.stderr
    art = out / "tiny"
    script = (art / "bench.sh").read_text()
    assert os.access(art / "bench.sh", os.X_OK) and 'cd "$(dirname "$0")"' in script
    assert "trtllm-bench" in script and "--dataset bench_dataset.jsonl" in script
    records = [json.loads(line) for line in (art / "bench_dataset.jsonl").read_text().splitlines()]
    assert len(records) == 32 and set(records[0]) == {"task_id", "prompt", "category", "output_tokens"}
    assert records[0]["output_tokens"] == 128
    assert "fetch.target         started: fetch " in build.stderr  # a long stage announces itself


def test_profile_arguments_complete_in_the_shell(tmp_path: Path) -> None:
    def complete(words: str) -> list[str]:
        env = {**os.environ, "_SPECDEPLOY_COMPLETE": "bash_complete", "COMP_WORDS": words,
               "COMP_CWORD": str(len(words.split()) - 1)}
        code = "from specdeploy.cli import main; main()"
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60,
                              cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        return done.stdout.splitlines()

    assert complete("specdeploy plan h200") == ["plain,h200-eagle3", "plain,h200-mtp-deepseek-v3-2node",
                                                "plain,h200-mtp-deepseek-v3", "file,h200"]
    assert complete("specdeploy profiles show h10") == ["plain,h100-draft-target", "plain,h100-ngram",
                                                        "plain,h100-vllm-eagle3", "plain,h100-vllm-mtp-qwen3-next"]


def test_profiles_copy_under_a_file_is_a_usage_error(tmp_path: Path) -> None:
    """Creating DEST's folder fails (a file in the way), or DEST is a name the OS refuses: exit 2 with the
    reason, not an internal error."""
    (tmp_path / "afile").write_text("x")
    for dest in ("afile/sub/", "d" * 5000):
        result = run("profiles", "copy", "h100-ngram", dest, cwd=tmp_path)
        assert result.returncode == 2, result.stderr
        assert "cannot write" in result.stderr and "internal error" not in result.stderr


def test_render_out_under_a_file_is_a_usage_error(tmp_path: Path) -> None:
    """--out whose parent cannot be a folder (a file in the way): exit 2 naming it, never an internal error."""
    (tmp_path / "afile").write_text("x")
    result = run("render", "h100-ngram", "--out", "afile/sub", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "cannot create the artifact folder" in result.stderr and "internal error" not in result.stderr


def test_render_of_a_vllm_profile_renders_tritons_vllm_backend_layout(tmp_path: Path) -> None:
    """vLLM serves itself (build writes no Triton repository), but `render` of its profile writes the repository of
    Triton's vLLM backend for a Triton host (it was a usage error: no Triton layout)."""
    done = run("render", "h100-vllm-eagle3", "--pretend", "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "tensorrt_llm/1/model.json" in done.stdout and "vllm repository" in done.stdout
