"""vLLM's OpenAI server started for real with n-gram speculation: healthy, streams a chat completion, counts its
drafts in /metrics, and stops with its engine process on SIGTERM."""

from __future__ import annotations

import json
import socket
import urllib.request
from pathlib import Path

import pytest

from specdeploy.engines.vllm import serve


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.slow
def test_ngram_server_streams_and_counts_drafts(vllm_python: Path, target: Path, tmp_path: Path) -> None:
    spec = serve.ServerSpec(target, _free_port(), {"method": "ngram", "num_speculative_tokens": 3,
                                                   "prompt_lookup_max": 4, "prompt_lookup_min": 2}, "smollm2",
                            enforce_eager=True)
    server = serve.start(vllm_python, spec, tmp_path / "server.log")
    try:
        body = {"model": "smollm2", "stream": True, "max_tokens": 48, "temperature": 0,
                "messages": [{"role": "user", "content": "Repeat after me: one two three four five six seven."}]}
        request = urllib.request.Request(server.url + "/v1/chat/completions", json.dumps(body).encode(),
                                         {"Content-Type": "application/json"})
        chunks = []
        with urllib.request.urlopen(request, timeout=300) as response:
            for line in response:
                text = line.decode().strip()
                if text.startswith("data: ") and text != "data: [DONE]":
                    chunks.append(json.loads(text[6:])["choices"][0]["delta"].get("content") or "")
        assert len([c for c in chunks if c]) > 1, "the answer did not stream"
        counters = serve.spec_counters(server)
        assert counters["drafts"] > 0
        assert len(counters["per_position"]) == 3
    finally:
        code = serve.stop(server)
    assert code is not None
    assert not serve.healthy(server)
