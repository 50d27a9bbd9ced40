"""`specdeploy serve` answers the OpenAI API (issue #21 item 4), checked with the real `openai` client against
the served SmolLM2: models, chat, completions, streaming (SSE ending in [DONE]), usage, errors in OpenAI's
shape. Before: 404, there was no such endpoint."""

from __future__ import annotations

import json
import os
import signal
import urllib.request
from pathlib import Path

import pytest

from specdeploy.api import generate
from tests.triton.test_serve_ask import SETS, serve

QUESTION = "What is 2 + 2?"


def test_openai_client_against_the_served_model(tmp_path: Path, backends: Path) -> None:  # noqa: ARG001
    pytest.importorskip("torch")
    openai = pytest.importorskip("openai")
    server, state, _ = serve(tmp_path / "art")
    try:
        base = json.loads(state.read_text())["openai"]
        client = openai.OpenAI(base_url=base, api_key="unused")
        assert [m.id for m in client.models.list()] == ["smollm2"]

        local = generate("cpu-smollm2", QUESTION, SETS, max_tokens=8)
        chat = client.chat.completions.create(model="smollm2", messages=[{"role": "user", "content": QUESTION}],
                                              max_tokens=8)
        assert chat.choices[0].message.content == local["text"] and chat.choices[0].finish_reason == "length"
        assert chat.usage.completion_tokens == 8 and chat.usage.prompt_tokens > 0

        chunks = list(client.chat.completions.create(model="smollm2", max_tokens=8, stream=True,
                                                     stream_options={"include_usage": True},
                                                     messages=[{"role": "user", "content": QUESTION}]))
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert text == local["text"] and len([c for c in chunks if c.choices]) > 2
        assert chunks[-1].usage.completion_tokens == 8

        completion = client.completions.create(model="smollm2", prompt="The capital of France is", max_tokens=6)
        assert completion.choices[0].text and completion.usage.completion_tokens == 6
        streamed = list(client.completions.create(model="smollm2", prompt="The capital of France is",
                                                  max_tokens=6, stream=True))
        assert "".join(c.choices[0].text for c in streamed) == completion.choices[0].text

        with pytest.raises(openai.BadRequestError) as bad:
            client.chat.completions.create(model="smollm2", messages=[{"role": "user", "content": QUESTION}],
                                           max_tokens=8, logit_bias={"42": 5})
        assert bad.value.body["type"] == "invalid_request_error" and "logit_bias" in bad.value.body["message"]
        with pytest.raises(openai.BadRequestError, match="temperature must be"):
            client.chat.completions.create(model="smollm2", messages=[{"role": "user", "content": QUESTION}],
                                           temperature=-1)  # the model's own INVALID_ARGUMENT, passed on
        with pytest.raises(openai.NotFoundError):
            client.chat.completions.create(model="gpt-4", messages=[{"role": "user", "content": QUESTION}])

        raw = urllib.request.Request(f"{base}/chat/completions", json.dumps(
            {"model": "smollm2", "max_tokens": 4, "stream": True,
             "messages": [{"role": "user", "content": QUESTION}]}).encode(), {"Content-Type": "application/json"})
        with urllib.request.urlopen(raw, timeout=300) as response:
            events = [line.strip() for line in response if line.startswith(b"data:")]
        assert events[-1] == b"data: [DONE]" and len(events) > 2
    finally:
        os.killpg(server.pid, signal.SIGINT)
        server.communicate(timeout=60)
