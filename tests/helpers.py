"""Helpers shared by tests: running the CLI (in process, or as a user does in a subprocess), inline profile files,
hub-layout caches built in tmp, golden-tree comparison. A test module imports its helpers from here, never from
another test module."""

from __future__ import annotations

import difflib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml


def _has_triton_schema() -> bool:
    try:
        return all(importlib.util.find_spec(m) is not None for m in ("tritonclient", "google.protobuf"))
    except ModuleNotFoundError:  # `google` itself is missing
        return False


needs_triton_schema = pytest.mark.skipif(
    not _has_triton_schema(), reason="rendering checks config.pbtxt against Triton's schema: the triton extra")

class CliResult(NamedTuple):
    code: int
    out: str
    err: str


def cli(*args: str, env: dict[str, str | None] | None = None, input: str | None = None) -> CliResult:
    """`specdeploy ARGS` in this process, through click's CliRunner isolation (stdin, stdout and stderr apart,
    `env` set for the call): `main` itself runs, so exit codes and --json errors are what a user gets."""
    from click.testing import CliRunner

    from specdeploy.cli import main

    try:
        runner = CliRunner(mix_stderr=False)  # type: ignore[call-arg]  # click < 8.2 mixes stderr in by default
    except TypeError:  # click >= 8.2 always keeps them apart
        runner = CliRunner()
    with runner.isolation(input=input, env=env) as streams:
        try:
            main(list(args))
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
        out, err = (s.getvalue().decode() for s in streams[:2])
    return CliResult(code, out, err)


def run_specdeploy(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
                   timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`python -m specdeploy ARGS` in a subprocess, as a user runs it: for what needs a fresh interpreter (what a
    command imports, signals, a real exit, a working folder of its own)."""
    return subprocess.run([sys.executable, "-m", "specdeploy", *args], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "NO_COLOR": "1", **(env or {})}, timeout=timeout)


LLAMA_31_8B_CONFIG: dict[str, Any] = {
    # published values: huggingface.co/meta-llama/Llama-3.1-8B-Instruct/config.json
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8, "vocab_size": 128256,
    "max_position_embeddings": 131072, "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "tie_word_embeddings": False,
    "torch_dtype": "bfloat16", "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009],
}


def write_profile(path: Path, data: dict[str, Any] | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False))
    return path


def hub_cache_model(cache: Path, repo_id: str, config: dict[str, Any], *, revision: str = "a" * 40,
                    files: dict[str, bytes] | None = None) -> Path:
    """A `models--ORG--NAME` folder as huggingface-hub lays it out, resolvable offline."""
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    snapshot = repo / "snapshots" / revision
    snapshot.mkdir(parents=True, exist_ok=True)
    (snapshot / "config.json").write_text(json.dumps(config))
    for name, content in (files or {}).items():
        (snapshot / name).write_bytes(content)
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(revision)
    return snapshot


def local_model(folder: Path, config: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def match_golden_file(path: Path, text: str, update: bool) -> None:
    """One emitted file's text against its golden file, with a diff; `update` (pytest --update-golden) rewrites
    the golden file instead."""
    if update:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return
    assert path.is_file(), f"missing golden file {path}: run pytest --update-golden"
    expected = path.read_text()
    diff = "".join(difflib.unified_diff(expected.splitlines(True), text.splitlines(True), str(path), "emitted"))
    assert text == expected, f"emitted output differs from the golden file:\n{diff}"


def match_golden_tree(golden: Path, files: dict[str, bytes], case: str, update: bool) -> None:
    """Rendered `files` (relative path -> bytes) against the golden folder, file set and bytes, with a diff;
    `update` (pytest --update-golden) rewrites the folder instead."""
    if update:
        shutil.rmtree(golden, ignore_errors=True)
        for rel, data in files.items():
            (golden / rel).parent.mkdir(parents=True, exist_ok=True)
            (golden / rel).write_bytes(data)
        return
    expected = {p.relative_to(golden).as_posix(): p.read_bytes() for p in golden.rglob("*") if p.is_file()}
    assert sorted(files) == sorted(expected), "file set differs; run pytest --update-golden if intended"
    for rel, data in files.items():
        if data != expected[rel]:
            diff = "".join(difflib.unified_diff(expected[rel].decode().splitlines(True), data.decode().splitlines(True),
                                                f"golden/{rel}", f"rendered/{rel}"))
            pytest.fail(f"{case}/{rel} differs from its golden file:\n{diff}")
