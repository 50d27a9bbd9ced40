"""Request bodies the OpenAI endpoint must refuse (issue 30, item 16): a lone surrogate and a body nested 100k deep
were 500s, `"max_tokens": [4]` was a 200 (Triton took the list as a tensor), `"stream": "false"` streamed (a
non-empty string is truthy), and a body that stalls was waited for without end. Each is now a 400 (a 408 for the
stall) in OpenAI's error shape. The Triton side is the TEST DOUBLE at the gRPC boundary
(tests/unit/serve/triton_double.py), as in test_openai_request_shapes.py."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from specdeploy.serve.openai_frontend import Served
from specdeploy.serve.openai_routes import routes
from tests.unit.serve.triton_double import inputs, one_event, triton_double

INPUTS = inputs("text_input", "max_tokens", "stream", "chat_template", "exclude_input_in_output")


async def post(path: str, body: bytes) -> tuple[int, dict[str, Any]]:
    async with triton_double(one_event) as address:
        served = Served(address, "m", INPUTS, decoupled=True)
        async with TestClient(TestServer(routes(served))) as client:
            reply = await client.post(path, data=body, headers={"Content-Type": "application/json"})
            return reply.status, json.loads(await reply.text())


@pytest.mark.parametrize(
    ("path", "body", "message"),
    [
        (
            "/v1/chat/completions",
            json.dumps({"messages": [{"role": "user", "content": "\ud800"}]}).encode(),
            "the request body: a string holds \\ud800, a lone surrogate: not Unicode text (line 1)",
        ),
        (
            "/v1/completions",
            json.dumps({"prompt": "\ud800x"}).encode(),
            "the request body: a string holds \\ud800, a lone surrogate: not Unicode text (line 1)",
        ),
        ("/v1/completions", b"[" * 100_000 + b"]" * 100_000, "the request body: nested deeper than 64 levels (line 1)"),
    ],
    ids=["chat-surrogate", "completion-surrogate", "deep"],
)
def test_a_body_that_is_not_json_text_is_a_400(path: str, body: bytes, message: str) -> None:
    status, reply = asyncio.run(post(path, body))
    assert status == 400 and reply["error"] == {
        "message": message,
        "type": "invalid_request_error",
        "param": None,
        "code": None,
    }


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("max_tokens", [4], "max_tokens must be an integer, not [4]"),
        ("max_tokens", True, "max_tokens must be an integer, not true"),
        ("max_tokens", 4.0, "max_tokens must be an integer, not 4.0"),
        ("temperature", "0.5", 'temperature must be a number, not "0.5"'),
        ("stream", "false", 'stream must be true or false, not "false"'),
        ("stream", 0, "stream must be true or false, not 0"),
        ("stop", [1], "stop must be a string or a list of strings"),
    ],
)
def test_a_parameter_of_the_wrong_type_is_a_400(field: str, value: Any, message: str) -> None:
    status, reply = asyncio.run(post("/v1/completions", json.dumps({"prompt": "hi", field: value}).encode()))
    assert status == 400 and reply["error"]["message"] == message and reply["error"]["param"] == field


def test_parameters_of_their_types_still_pass() -> None:
    body = {"prompt": "hi", "max_tokens": 4, "stream": False, "stream_options": None}
    status, reply = asyncio.run(post("/v1/completions", json.dumps(body).encode()))
    assert status == 200 and reply["choices"][0]["text"] == "ok"


def test_a_stalled_body_is_answered_408() -> None:
    async def stall() -> bytes:
        async with triton_double(one_event) as address:
            app = routes(Served(address, "m", INPUTS, decoupled=True), body_timeout_s=0.5)
            async with TestServer(app) as server:
                reader, writer = await asyncio.open_connection(server.host, server.port)
                writer.write(
                    b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    b'Content-Length: 100\r\n\r\n{"prompt": '
                )  # and then nothing more
                await writer.drain()
                try:
                    return await asyncio.wait_for(reader.read(), 60)  # the test's own bound, never reached
                finally:
                    writer.close()

    head, _, body = asyncio.run(stall()).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408 ")
    assert json.loads(body)["error"]["message"] == "the request body did not arrive within 0.5 s"
