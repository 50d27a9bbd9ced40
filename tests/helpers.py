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
import time
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple

import pytest
import yaml


def _has_triton_schema() -> bool:
    try:
        return all(importlib.util.find_spec(m) is not None for m in ("tritonclient", "google.protobuf"))
    except ModuleNotFoundError:  # `google` itself is missing
        return False


TRITON_SCHEMA_REASON = "rendering checks config.pbtxt against Triton's schema: the triton extra"
needs_triton_schema = pytest.mark.skipif(not _has_triton_schema(), reason=TRITON_SCHEMA_REASON)


def skip_without_triton_schema() -> None:
    """needs_triton_schema for a fixture (a mark cannot go on one): skips every test that uses it."""
    if not _has_triton_schema():
        pytest.skip(TRITON_SCHEMA_REASON)


class CliResult(NamedTuple):
    code: int
    out: str
    err: str


def cli(*args: str, env: Mapping[str, str | None] | None = None, input: str | None = None) -> CliResult:
    """`specdeploy ARGS` in this process, through click's CliRunner isolation (stdin, stdout and stderr apart,
    `env` set for the call): `main` itself runs, so exit codes and --json errors are what a user gets; a traceback
    on stderr (anything but `--debug`) fails the test."""
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
    assert "--debug" in args or "Traceback" not in err, err  # a user never sees one: an internal error says so
    return CliResult(code, out, err)


def run_specdeploy(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """`python -m specdeploy ARGS` in a subprocess, as a user runs it: for what needs a fresh interpreter (what a
    command imports, signals, a real exit, a working folder of its own)."""
    return subprocess.run(
        [sys.executable, "-m", "specdeploy", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "NO_COLOR": "1", **(env or {})},
        timeout=timeout,
    )


def activated_venv_env(venv: Path) -> dict[str, str]:
    """The environment `source VENV/bin/activate` leaves: VIRTUAL_ENV, its bin first on PATH, no PYTHONHOME."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONHOME"}
    return {
        **env,
        "NO_COLOR": "1",
        "VIRTUAL_ENV": str(venv),
        "VIRTUAL_ENV_PROMPT": f"({venv.name}) ",
        "PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
    }


def closed_port() -> int:
    """A local TCP port nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def load_script(relative: str) -> ModuleType:
    """A script of this checkout that is no package module (`bench/vllm_tune.py`, `tools/demo.py`), imported by path."""
    path = Path(__file__).resolve().parents[1] / relative
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pyproject() -> dict[str, Any]:
    """This checkout's pyproject.toml (tomli, which pytest brings, reads it on Python 3.10)."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    return tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text(encoding="utf-8"))


def gone(pid: int) -> bool:
    """Whether the process is gone (or a zombie nobody reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"


def wait_gone(pid: int, seconds: float = 30) -> bool:
    """Whether the process is gone within `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if gone(pid):
            return True
        time.sleep(0.2)
    return False


def billion_laughs(levels: int = 9) -> str:
    """YAML whose anchors nest `levels` deep, nine aliases each: 9**levels strings once expanded."""
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{i}: &a{i} [{','.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


def llm_request(**values: object) -> dict[str, Any]:
    """A Triton request's tensors as the llmapi model reads them: `text_input` "hi" plus `values` (name -> one
    value or a list)."""
    import numpy as np

    out = {"text_input": np.array([b"hi"], dtype=object)}
    for name, value in values.items():
        items = value if isinstance(value, list) else [value]
        out[name] = np.array(
            [v.encode() if isinstance(v, str) else v for v in items],
            dtype=object if isinstance(items[0], str) else None,
        )
    return out


LLAMA_31_8B_CONFIG: dict[str, Any] = {
    # published values: huggingface.co/meta-llama/Llama-3.1-8B-Instruct/config.json
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
    "rms_norm_eps": 1e-05,
    "rope_theta": 500000.0,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "bos_token_id": 128000,
    "eos_token_id": [128001, 128008, 128009],
}


def write_profile(path: Path, data: dict[str, Any] | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False))
    return path


def tiny_llama_profile(tmp_path: Path, **over: object) -> Path:
    """`tmp_path/tiny.yaml`: Llama-3.1-8B's shape in a local folder with a small weights file, n-gram K = 4 on an
    H200 (what the build tests build)."""
    model = local_model(tmp_path / "llama", LLAMA_31_8B_CONFIG)
    (model / "model.safetensors").write_bytes(b"w" * 4096)
    data: dict[str, object] = {
        "target": {"model": str(model), "dtype": "bfloat16"},
        "hardware": {"gpu": "h200"},
        "speculative": {"mechanism": "ngram", "draft_len": 4},
        "serving": {"max_batch_size": 16, "max_seq_len": 4096},
        **over,
    }
    return write_profile(tmp_path / "tiny.yaml", data)


HUB_TARGET_REV, HUB_DRAFT_REV = "d" * 40, "e" * 40
"""The commits `hub_draft_target_profile` pins its target and drafter at."""
SMALL_LLAMA = {
    **LLAMA_31_8B_CONFIG,
    "num_hidden_layers": 2,
    "hidden_size": 512,
    "intermediate_size": 1024,
    "num_attention_heads": 8,
    "num_key_value_heads": 8,
}


def hub_draft_target_profile(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """(profile, env): a `draft_len: auto` draft/target profile whose target (acme/llama) and drafter
    (acme/llama-small) sit in an offline hub cache under tmp_path, and the env that points specdeploy at it."""
    cache = tmp_path / "hub"
    hub_cache_model(
        cache,
        "acme/llama",
        LLAMA_31_8B_CONFIG,
        revision=HUB_TARGET_REV,
        files={"model.safetensors": b"w" * 64, "tokenizer.json": b"{}"},
    )
    hub_cache_model(
        cache,
        "acme/llama-small",
        SMALL_LLAMA,
        revision=HUB_DRAFT_REV,
        files={"model.safetensors": b"s" * 64, "tokenizer.json": b"{}"},
    )
    profile = write_profile(
        tmp_path / "profiles" / "auto.yaml",
        {
            "target": {"model": "acme/llama"},
            "hardware": {"gpu": "h200"},
            "runtime": {"trtllm_version": "1.2.1"},
            "speculative": {"mechanism": "draft_target", "draft_model": "acme/llama-small", "draft_len": "auto"},
            "serving": {"max_batch_size": 8, "max_seq_len": 4096},
            "tune": {"concurrency": [1, 4]},
        },
    )
    return profile, {"HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "SPECDEPLOY_TUNE_MODEL_PACE_S": "0"}


def profile_data(model: str = "meta-llama/Llama-3.1-8B-Instruct", **sections: Any) -> dict[str, Any]:
    """A profile's data: `model` on an H200, plus `sections`."""
    return {"target": {"model": model}, "hardware": {"gpu": "h200"}, **sections}


def profile_problems(tmp_path: Path, data: dict[str, Any]) -> list[str]:
    """`dotted.path: message` of every error `validate` reports for `data` written to tmp_path/p.yaml ([]: valid)."""
    from specdeploy.api import load_and_resolve
    from specdeploy.issues import ProfileError

    path = write_profile(tmp_path / "p.yaml", data)
    try:
        load_and_resolve(str(path))
    except ProfileError as exc:
        return [f"{i.dotted}: {i.message}" for i in exc.issues]
    return []


def profile_errors(path: Path | str, *sets: str) -> list[Any]:
    """The located issues `validate` reports for a profile that must be invalid (its ProfileError's)."""
    from specdeploy.api import load_and_resolve
    from specdeploy.issues import ProfileError

    with pytest.raises(ProfileError) as info:
        load_and_resolve(str(path), sets)
    return list(info.value.issues)


def hub_cache_model(
    cache: Path,
    repo_id: str,
    config: dict[str, Any],
    *,
    revision: str = "a" * 40,
    files: dict[str, bytes] | None = None,
) -> Path:
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
            diff = "".join(
                difflib.unified_diff(
                    expected[rel].decode().splitlines(True),
                    data.decode().splitlines(True),
                    f"golden/{rel}",
                    f"rendered/{rel}",
                )
            )
            pytest.fail(f"{case}/{rel} differs from its golden file:\n{diff}")


def slowed(values: dict[str, Any], factor: float) -> dict[str, Any]:
    """A measurement's values as a run `factor` times as fast would give them (both output token throughputs)."""
    return {
        **values,
        "output_token_throughput": values["output_token_throughput"] * factor,
        "output_token_throughput_per_user": values["output_token_throughput_per_user"] * factor,
    }


def pip_install_into(target: Path, *packages: Path | str) -> Path:
    """Install plugin packages from their folders into an extra site folder, as a user would (pip, offline)."""
    for package in packages:
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index"]
            + ["--target", str(target), str(package)],
            check=True,
            capture_output=True,
        )
    return target
