"""`serve` runs only what its gate passed, and nothing can load code into it afterwards: with a real tritonserver,
a python model, and an environment as `source .venv/bin/activate` leaves it (issue 30 items 1, 2, 3, 19)."""

from __future__ import annotations

import base64
import json
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.helpers import activated_venv_env
from tests.triton.helpers import ENV, MODEL, echo_repo, infer, planted_bytecode, serve_gated, stop

PAYLOAD = """import pathlib
pathlib.Path({marker!r}).write_text("ran")


class TritonPythonModel:
    def execute(self, requests):
        return []
"""
PWN_CONFIG = {
    "name": "pwn",
    "backend": "python",
    "max_batch_size": 0,
    "input": [{"name": "IN", "data_type": "TYPE_INT32", "dims": [1]}],
    "output": [{"name": "OUT", "data_type": "TYPE_INT32", "dims": [1]}],
}


def http(url: str, body: dict[str, object] | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode(), method="POST")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and ".specdeploy" not in p.parts
    }


def test_nothing_loads_code_into_a_served_repository(tmp_path: Path, backends: Path) -> None:  # noqa: ARG001
    """Before: the venv's Python stdlib reached the stub (`_ssl`: undefined symbol), a load request with a python
    config and a base64 model.py ran it, serve.json was 0644, and the stub wrote __pycache__ into the repository."""
    import tritonclient.grpc as grpcclient
    from tritonclient.utils import InferenceServerException

    repo = echo_repo(tmp_path / "repo", 1)
    model = repo / "echo" / "1" / "model.py"
    model.write_text("import ssl  # as every HTTP client does\n" + model.read_text())
    before = tree(repo)
    marker = tmp_path / "pwned"
    payload = base64.b64encode(PAYLOAD.format(marker=str(marker)).encode()).decode()
    process, state = serve_gated(repo, activated_venv_env(Path(sys.prefix)))
    try:
        assert state is not None, stop(process)
        assert (repo / ".specdeploy" / "serve.json").stat().st_mode & 0o077 == 0
        base = f"http://{state['http']}/v2/repository"
        load = {"parameters": {"config": json.dumps(PWN_CONFIG), "file:1/model.py": payload}}
        for url, body in (
            (f"{base}/models/pwn/load", load),
            (f"{base}/models/echo/load", load),
            (f"{base}/models/echo/unload", {}),
            (f"{base}/index", {}),
        ):
            status, text = http(url, body)
            assert status >= 400, (url, status, text)
        client = grpcclient.InferenceServerClient(str(state["grpc"]))
        with pytest.raises(InferenceServerException):
            client.load_model("pwn", config=json.dumps(PWN_CONFIG), files={"file:1/model.py": payload.encode()})
        with pytest.raises(InferenceServerException):
            client.unload_model("echo")
        with pytest.raises(InferenceServerException):
            client.register_system_shared_memory("out", "/specdeploy-test", 64)
        assert infer(str(state["grpc"]), 41) == 42 and client.is_model_ready("echo")
        assert not marker.exists() and not client.is_model_ready("pwn")
    finally:
        output = stop(process)
    assert process.returncode == 0, output
    assert tree(repo) == before  # nothing written into it: no __pycache__
    assert not (repo / ".specdeploy" / "served").exists()


@pytest.mark.parametrize("plant", ["bytecode", "version", "model folder"])
def test_a_repository_holding_what_render_never_writes_is_not_served(tmp_path: Path, plant: str) -> None:
    """Before: a planted .pyc ran in model.py's place (answers + 1000), a planted `2/` was the version served."""
    repo = echo_repo(tmp_path / "repo", 1, planted=plant == "model folder")
    if plant == "bytecode":
        planted_bytecode(repo / "echo" / "1" / "model.py")
        named = "echo/1/__pycache__"
    elif plant == "version":
        (repo / "echo" / "2").mkdir()
        (repo / "echo" / "2" / "model.py").write_text(MODEL.format(add=1000))
        named = "echo/2"
    else:
        named = "planted"
    process, state = serve_gated(repo, ENV)
    output = stop(process)
    assert state is None and process.returncode == 1, output
    assert f"{named}: " in output and "never writes" in output


def test_a_model_that_fails_to_load_is_named_with_tritons_reason(tmp_path: Path) -> None:
    """Loaded at start (no load request to answer with the reason): the reason comes from Triton's log."""
    repo = echo_repo(tmp_path / "repo", 1)
    (repo / "echo" / "1" / "model.py").write_text("raise RuntimeError('no weights here')\n")
    process, state = serve_gated(repo, ENV)
    output = stop(process)
    assert state is None and process.returncode == 1, output
    assert (
        "tritonserver could not load echo:\nfailed to load 'echo' version 1: Internal: RuntimeError: no weights "
        "here" in output
    )
