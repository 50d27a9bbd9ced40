"""The argv and environment `specdeploy serve` runs vLLM's OpenAI server with: the artifact's config file on
127.0.0.1, extra engine arguments that may add settings but never override what the artifact or `serve` sets."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from specdeploy.engines.vllm.serve import server_argv, server_env
from specdeploy.errors import UsageError

CONFIG = """\
model: /models/smollm2
host: 127.0.0.1
port: 8000
max-num-seqs: 4
speculative-config:
  method: ngram
  num_speculative_tokens: 3
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "vllm-serve.yaml"
    path.write_text(CONFIG)
    return path


def test_the_server_runs_the_module_on_the_config_file_on_loopback(config: Path) -> None:
    argv = server_argv(Path("/py"), config, name="smollm2", port=8011, args=("--enforce-eager",))
    assert argv[:3] == ["/py", "-m", "vllm.entrypoints.openai.api_server"]
    assert argv[argv.index("--config") + 1] == str(config)
    assert argv[argv.index("--host") + 1] == "127.0.0.1" and argv[argv.index("--port") + 1] == "8011"
    assert argv[argv.index("--served-model-name") + 1] == "smollm2"
    assert argv[-1] == "--enforce-eager"  # after the config file's settings: vLLM takes the command line's last


@pytest.mark.parametrize("arg", ["--host=0.0.0.0", "--port", "--uds=/tmp/s", "--served_model_name=x", "--ho"])
def test_an_extra_argument_cannot_move_the_endpoint(config: Path, arg: str) -> None:
    with pytest.raises(UsageError, match="`specdeploy serve` sets"):
        server_argv(Path("/py"), config, name="m", port=1, args=(arg,))


@pytest.mark.parametrize(
    "arg",
    ["--speculative-config={}", "--speculative-config.num_speculative_tokens=5", "--max_num_seqs=8", "--speculative"],
)
def test_an_extra_argument_cannot_override_the_verified_config(config: Path, arg: str) -> None:
    with pytest.raises(UsageError, match=r"is the artifact's \(vllm-serve.yaml"):
        server_argv(Path("/py"), config, name="m", port=1, args=(arg,))


def test_short_options_are_refused(config: Path) -> None:
    """`-tp 2` is --tensor-parallel-size in vLLM's parser: a short alias would slip past the check."""
    with pytest.raises(UsageError, match="long option names"):
        server_argv(Path("/py"), config, name="m", port=1, args=("-tp", "2"))


def test_the_server_compiles_as_the_tune_did_unless_the_user_says_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VLLM_USE_AOT_COMPILE", raising=False)
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "3")
    env = server_env()
    assert env["VLLM_USE_AOT_COMPILE"] == "0" and env["VLLM_CPU_KVCACHE_SPACE"] == "3"
    monkeypatch.setenv("VLLM_USE_AOT_COMPILE", "1")
    assert server_env()["VLLM_USE_AOT_COMPILE"] == "1"


STAND_IN = """
import http.server, os, sys
print("VLLM_USE_AOT_COMPILE=" + os.environ.get("VLLM_USE_AOT_COMPILE", "unset"), flush=True)
class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Health).serve_forever()
"""
"""Stands in for vLLM's OpenAI server: answers /health, says which compile setting it was started with."""


def test_start_gives_the_server_that_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from specdeploy.engines.vllm.serve import start, stop
    from specdeploy.render.server import free_port

    monkeypatch.delenv("VLLM_USE_AOT_COMPILE", raising=False)
    port = free_port()
    server = start(
        [sys.executable, "-c", STAND_IN, str(port)], port=port, name="m", log=tmp_path / "v.log", timeout_s=60
    )
    try:
        assert "VLLM_USE_AOT_COMPILE=0" in server.log()
    finally:
        stop(server)
