"""Triton ending a request with no response is a 502 in OpenAI's shape, streamed or not, never an empty answer
with finish_reason "stop". The Triton side is a TEST DOUBLE at the HTTP boundary: an aiohttp app answering
/generate_stream with 200 and no event (what a decoupled model sending only its FINAL flag gives)."""

from __future__ import annotations

import asyncio
import json

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from specdeploy.serve.openai_frontend import Served
from specdeploy.serve.openai_routes import routes

INPUTS = frozenset({"text_input", "max_tokens", "stream", "chat_template"})


async def silent_stream(_request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(_request)
    await response.write_eof()
    return response


async def ask(stream: bool) -> tuple[int, str]:
    triton = web.Application()
    triton.router.add_post("/v2/models/m/generate_stream", silent_stream)
    async with TestServer(triton) as fake_triton:
        served = Served(f"127.0.0.1:{fake_triton.port}", "m", INPUTS, decoupled=True)
        async with TestClient(TestServer(routes(served))) as client:
            response = await client.post("/v1/completions", json={"prompt": "hi", "max_tokens": 4, "stream": stream})
            return response.status, await response.text()


def test_no_response_is_a_server_error_not_an_empty_answer() -> None:
    status, text = asyncio.run(ask(stream=False))
    assert status == 502 and json.loads(text)["error"]["type"] == "server_error"
    assert "ended the request without a response" in json.loads(text)["error"]["message"]
    status, text = asyncio.run(ask(stream=True))  # nothing sent yet: still a plain JSON error, not an empty stream
    assert status == 502 and "ended the request without a response" in text and "[DONE]" not in text
