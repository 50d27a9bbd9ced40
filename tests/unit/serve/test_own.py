"""Which server `serve` runs for a folder, and the record an engine's own server leaves, without any server: the
engine the artifact's manifest names decides; a record is live only while its pid runs the process it names."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from specdeploy import api
from specdeploy.errors import UsageError
from specdeploy.execute.served import STATE, recorded
from specdeploy.serve.own import engine_serving, start

MODULE = "vllm.entrypoints.openai.api_server"


def _artifact(folder: Path, manifest: object) -> Path:
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


@pytest.mark.parametrize(
    ("backend", "serves_itself"), [("vllm", True), ("reference", False), ("pytorch", False), ("no-such-engine", False)]
)
def test_the_manifests_engine_decides_who_serves(tmp_path: Path, backend: str, serves_itself: bool) -> None:
    engine = engine_serving(_artifact(tmp_path / "art", {"backend": backend}))
    assert (engine is not None and engine.name == backend) is serves_itself


@pytest.mark.parametrize("manifest", ["not json", ["a", "list"], {"backend": 3}])
def test_a_garbled_manifest_is_left_to_verify(tmp_path: Path, manifest: object) -> None:
    folder = tmp_path / "art"
    folder.mkdir()
    (folder / "manifest.json").write_text(manifest if isinstance(manifest, str) else json.dumps(manifest))
    assert engine_serving(folder) is None


def test_engine_arguments_are_refused_for_tritonserver(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="takes no engine arguments"):
        start(tmp_path, engine_args=("--enforce-eager",))


@pytest.fixture
def server_process() -> Iterator[subprocess.Popen[bytes]]:
    """A process whose command line names vLLM's server module, as the real one's does."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "-m", MODULE])
    cmdline = Path(f"/proc/{process.pid}/cmdline")
    deadline = time.monotonic() + 30
    while MODULE.encode() not in cmdline.read_bytes() and time.monotonic() < deadline:
        time.sleep(0.01)  # until the forked child has exec'd: before that its command line is the parent's
    yield process
    process.kill()
    process.wait()


def _record(owner: Path, pid: int, process: str = MODULE) -> None:
    (owner / STATE).parent.mkdir(parents=True, exist_ok=True)
    (owner / STATE).write_text(
        json.dumps({"pid": pid, "openai": "http://127.0.0.1:1", "models": ["m"], "process": process})
    )


def test_an_openai_record_is_live_while_its_pid_runs_the_named_server(
    tmp_path: Path, server_process: subprocess.Popen[bytes]
) -> None:
    _record(tmp_path, server_process.pid)
    assert recorded(tmp_path) is not None
    _record(tmp_path, server_process.pid, "tritonserver")  # the pid runs something else now: stale
    assert recorded(tmp_path) is None and not (tmp_path / STATE).exists()


def test_ask_refuses_a_draft_length_for_an_engines_own_server(
    tmp_path: Path, server_process: subprocess.Popen[bytes]
) -> None:
    _record(tmp_path, server_process.pid)
    with pytest.raises(UsageError, match="takes no per-request draft length"):
        api.ask("Hi", artifact=tmp_path, draft_len=0)
