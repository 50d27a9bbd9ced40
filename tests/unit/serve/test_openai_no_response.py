"""Triton ending a request with no response is a 502 in OpenAI's shape, streamed or not, never an empty answer
with finish_reason "stop". The Triton side is a TEST DOUBLE at the gRPC boundary (tests/unit/serve/triton_double.py)
ending the stream with no response (what a decoupled model sending only its FINAL flag gives)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from aiohttp.test_utils import TestClient, TestServer

from specdeploy.serve.openai_frontend import Served
from specdeploy.serve.openai_routes import routes
from tests.unit.serve.triton_double import inputs, triton_double

INPUTS = inputs("text_input", "max_tokens", "stream", "chat_template")


async def nothing(_request: Any, _context: Any) -> AsyncIterator[Any]:
    return
    yield


async def ask(stream: bool) -> tuple[int, str]:
    async with triton_double(nothing) as address:
        served = Served(address, "m", INPUTS, decoupled=True)
        async with TestClient(TestServer(routes(served))) as client:
            response = await client.post("/v1/completions", json={"prompt": "hi", "max_tokens": 4, "stream": stream})
            return response.status, await response.text()


def test_no_response_is_a_server_error_not_an_empty_answer() -> None:
    status, text = asyncio.run(ask(stream=False))
    assert status == 502 and json.loads(text)["error"]["type"] == "server_error"
    assert "ended the request without a response" in json.loads(text)["error"]["message"]
    status, text = asyncio.run(ask(stream=True))  # nothing sent yet: still a plain JSON error, not an empty stream
    assert status == 502 and "ended the request without a response" in text and "[DONE]" not in text
