"""User and environment faults are exit 1 or 2 with a clear message, never an internal error (exit 3): a full
disk and a read-only mount (small tmpfs mounts in a private mount namespace; skipped where mounting is not
allowed), non-UTF-8 input, a garbage serve record. In process through `main` (tests.helpers.cli), in a subprocess
where the process is under test: its own mount namespace, and the bytes of its argv."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import LLAMA_31_8B_CONFIG, cli, local_model, write_profile

ENV = {**os.environ, "NO_COLOR": "1"}


def in_mount(options: str, folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`specdeploy ARGS` with a fresh tmpfs (`options`) on `folder`, in a mount namespace of its own."""
    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root and unshare")
    folder.mkdir(parents=True, exist_ok=True)
    argv = " ".join(f"'{a}'" for a in args)
    script = f"mount -t tmpfs -o {options} tmpfs '{folder}' && exec '{sys.executable}' -m specdeploy {argv}"
    probe = subprocess.run(["unshare", "-m", "sh", "-c", f"mount -t tmpfs tmpfs '{folder}'"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"mounting is not allowed here: {probe.stderr.decode()[-200:]}")
    return subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, env=ENV, timeout=300)


def _profile(tmp_path: Path) -> Path:
    model = local_model(tmp_path / "llama", LLAMA_31_8B_CONFIG)
    (model / "model.safetensors").write_bytes(b"w" * 4096)
    return write_profile(
        tmp_path / "tiny.yaml",
        {
            "target": {"model": str(model)},
            "hardware": {"gpu": "h200"},
            "speculative": {"mechanism": "ngram", "draft_len": 4},
            "serving": {"max_batch_size": 16},
        },
    )


def _clean(stderr: str) -> None:
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr


@pytest.mark.parametrize("size", ["8k", "40k"])
def test_a_full_disk_is_a_failed_build(tmp_path: Path, size: str) -> None:
    result = in_mount(
        f"size={size}", tmp_path / "out", "build", str(_profile(tmp_path)), "--out", str(tmp_path / "out")
    )
    assert result.returncode in (1, 2), result.stderr
    _clean(result.stderr)
    assert "No space left on device" in result.stderr


def test_a_read_only_out_is_a_usage_error(tmp_path: Path) -> None:
    result = in_mount("ro", tmp_path / "out", "build", str(_profile(tmp_path)), "--out", str(tmp_path / "out"))
    assert result.returncode == 2 and "cannot create the artifact folder" in result.stderr, result.stderr
    _clean(result.stderr)


def test_profiles_copy_into_a_read_only_folder(tmp_path: Path) -> None:
    result = in_mount("ro", tmp_path / "ro", "profiles", "copy", "h200-eagle3", str(tmp_path / "ro"))
    assert result.returncode == 2 and "cannot write" in result.stderr, result.stderr
    _clean(result.stderr)


def test_a_non_utf8_prompt_is_a_usage_error() -> None:
    result = subprocess.run(
        [sys.executable.encode(), b"-m", b"specdeploy", b"ask", b"caf\xe9", b"--url", b"x:1", b"--model", b"m"],
        capture_output=True,
        env=ENV,
        timeout=120,
    )
    assert result.returncode == 2 and b"not valid UTF-8" in result.stderr, result.stderr
    assert b"Traceback" not in result.stderr


@pytest.mark.parametrize(
    "record",
    [
        "garbage",
        "{}",
        json.dumps({"pid": "x", "grpc": 3, "models": "m"}),
        json.dumps({"pid": 1, "grpc": "127.0.0.1:1", "models": ["m"]}),
    ],
)
def test_a_garbage_or_stale_serve_record(tmp_path: Path, record: str) -> None:
    (tmp_path / ".specdeploy").mkdir()
    (tmp_path / ".specdeploy" / "serve.json").write_text(record)
    code, _, err = cli("ask", "hi", "--artifact", str(tmp_path))
    assert code == 2 and "is stale" in err, err
    _clean(err)


def test_a_non_utf8_tune_dataset(tmp_path: Path) -> None:
    data = tmp_path / "prompts.jsonl"
    data.write_bytes(b'{"prompt": "caf\xe9"}\n')
    profile = write_profile(
        tmp_path / "t.yaml",
        {
            "target": {"model": "meta-llama/Llama-3.1-8B-Instruct"},
            "hardware": {"gpu": "h200"},
            "speculative": {"mechanism": "eagle3", "draft_model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"},
            "tune": {"dataset": str(data)},
        },
    )
    code, _, err = cli("tune", str(profile), "--backend", "model", "--out", str(tmp_path / "out"))
    assert code == 2 and "UTF-8" in err, err
    _clean(err)


def read_only_copy(source: Path, folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`specdeploy ARGS` with `source` bound read-only on `folder`, in a mount namespace of its own."""
    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("a read-only bind mount needs root and unshare")
    folder.mkdir(parents=True, exist_ok=True)
    argv = " ".join(f"'{a}'" for a in args)
    script = (
        f"mount --bind '{source}' '{folder}' && mount -o remount,ro,bind '{folder}' && "
        f"exec '{sys.executable}' -m specdeploy {argv}"
    )
    result = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, env=ENV, timeout=300)
    if "mount:" in result.stderr:
        pytest.skip(f"mounting is not allowed here: {result.stderr[-200:]}")
    return result


def test_read_only_artifacts_under_a_cached_build_and_serve(tmp_path: Path) -> None:
    profile = _profile(tmp_path)
    assert cli("build", str(profile), "--out", str(tmp_path / "out")).code == 0
    ro = tmp_path / "ro"
    rebuilt = read_only_copy(tmp_path / "out", ro, "build", str(profile), "--out", str(ro))
    assert rebuilt.returncode == 2 and "it is not writable" in rebuilt.stderr, rebuilt.stderr  # refused before any lock
    _clean(rebuilt.stderr)
    served = read_only_copy(tmp_path / "out", ro, "serve", str(ro / "tiny"))
    assert served.returncode == 2 and "serve a writable copy" in served.stderr, served.stderr
    _clean(served.stderr)
