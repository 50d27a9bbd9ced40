"""The gRPC transport's limits, each of which the HTTP transport it replaced had: Triton silent on a request is a
504 after IDLE_S and the request is cancelled (HTTP had a 600 s read timeout; without one a hung model held the
client forever); on a decoupled model's stream, an error before any response from a model that is not ready is a 502
(HTTP /generate_stream answered 404/503, which became 502), from a ready one a 400; text that is not valid Unicode
and floats that are not finite (or beyond FP32) are a 400, not a 500 or an inf. The Triton side is a TEST DOUBLE at
the gRPC boundary (tests/unit/serve/triton_double.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from aiohttp.test_utils import TestClient, TestServer

from specdeploy.serve import triton_grpc
from specdeploy.serve.openai_frontend import Served
from specdeploy.serve.openai_routes import routes
from tests.unit.serve.triton_double import Answer, TritonError, inputs, response, triton_double

INPUTS = inputs("text_input", "max_tokens", "chat_template", "exclude_input_in_output", "temperature")


async def ask(answer: Answer, body: dict[str, Any], decoupled: bool, ready: bool = True) -> tuple[int, Any]:
    async with triton_double(answer, ready) as double:
        async with TestClient(TestServer(routes(Served(double, "m", INPUTS, decoupled=decoupled)))) as client:
            reply = await client.post("/v1/completions", json=body)
            return reply.status, await reply.json()


@pytest.mark.parametrize("decoupled", [False, True])
def test_a_silent_triton_is_a_504_and_its_request_is_cancelled(
    decoupled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(triton_grpc, "IDLE_S", 0.5)
    cancelled: list[bool] = []

    async def silent(_request: Any, _context: Any) -> AsyncIterator[Any]:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:  # grpc.aio cancels the servicer when the client cancels the RPC
            cancelled.append(True)
            raise
        yield response("late", [5])

    status, body = asyncio.run(ask(silent, {"prompt": "hi", "max_tokens": 4}, decoupled))
    assert status == 504 and body["error"]["type"] == "server_error", body
    assert "sent nothing for 0.5 s" in body["error"]["message"] and cancelled == [True]


def failing(message: str) -> Answer:
    async def fail(_request: Any, _context: Any) -> AsyncIterator[Any]:
        raise TritonError(grpc.StatusCode.INTERNAL, message)
        yield

    return fail


def test_a_stream_error_from_a_model_that_is_not_ready_is_a_502() -> None:
    message = "Request for unknown model: 'm' has no available versions"
    status, body = asyncio.run(ask(failing(message), {"prompt": "hi"}, decoupled=True, ready=False))
    assert (status, body["error"]["type"]) == (502, "server_error") and message in body["error"]["message"]
    status, body = asyncio.run(ask(failing("max_tokens must be at least 1"), {"prompt": "hi"}, decoupled=True))
    assert (status, body["error"]["type"]) == (400, "invalid_request_error")


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (
            {"prompt": "\ud800 hi"},
            "the request body: a string holds \\ud800, a lone surrogate: not Unicode text (line 1)",
        ),
        (
            {"prompt": "hi", "temperature": float("nan")},
            "the request body: not valid JSON: NaN is not a JSON number (RFC 8259 allows finite numbers only) (line 1)",
        ),
        ({"prompt": "hi", "temperature": 1e39}, "input temperature (FP32) cannot take 1e+39"),
    ],
)
def test_text_and_numbers_triton_could_not_take_are_a_400(body: dict[str, Any], said: str) -> None:
    async def never(_request: Any, _context: Any) -> AsyncIterator[Any]:
        raise AssertionError("nothing should reach Triton")
        yield

    for decoupled in (False, True):
        status, reply = asyncio.run(ask(never, body, decoupled))
        assert (status, reply["error"]["message"]) == (400, said), reply
