"""A model that is not decoupled is asked with one unary gRPC ModelInfer, whose error keeps Triton's status: an
INTERNAL (or other non-client) failure is a 502 server_error in OpenAI's shape, Triton's message kept, and only
INVALID_ARGUMENT is a 400. Before: every Triton error reached the client as a 400 (Triton's stream carries the
message without its code), so a model failure looked like the client's fault and OpenAI clients did not retry it.
A client that leaves cancels the unary call. The Triton side is a TEST DOUBLE at the gRPC boundary
(tests/unit/serve/triton_double.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from aiohttp import ClientSession
from aiohttp.test_utils import TestClient, TestServer

from specdeploy.serve.openai_frontend import Served
from specdeploy.serve.openai_routes import routes
from specdeploy.serve.openai_server import Frontend
from tests.helpers import closed_port
from tests.unit.serve.triton_double import Answer, TritonError, inputs, response, triton_double

INPUTS = inputs("text_input", "max_tokens", "chat_template", "exclude_input_in_output")


async def ask(
    answer: Answer, chat: bool = False, decoupled: bool = False, address: str | None = None
) -> tuple[int, dict[str, Any]]:
    async with triton_double(answer) as double:
        served = Served(address or double, "m", INPUTS, decoupled=decoupled)
        async with TestClient(TestServer(routes(served))) as client:
            if chat:
                reply = await client.post(
                    "/v1/chat/completions", json={"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}
                )
            else:
                reply = await client.post("/v1/completions", json={"prompt": "hi", "max_tokens": 4})
            return reply.status, await reply.json()


def failing(code: grpc.StatusCode, message: str) -> Answer:
    async def fail(_request: Any, _context: Any) -> AsyncIterator[Any]:
        raise TritonError(code, message)
        yield

    return fail


@pytest.mark.parametrize(
    "code", [grpc.StatusCode.INTERNAL, grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.NOT_FOUND, grpc.StatusCode.UNKNOWN]
)
def test_a_model_failure_is_a_502_server_error_with_tritons_message(code: grpc.StatusCode) -> None:
    status, body = asyncio.run(ask(failing(code, "CUDA out of memory in the model")))
    assert status == 502, body
    assert body["error"]["type"] == "server_error" and set(body["error"]) == {"message", "type", "param", "code"}
    assert f"{code.name} CUDA out of memory in the model" in body["error"]["message"]


def test_invalid_argument_stays_a_400_with_tritons_message() -> None:
    message = "max_tokens must be at least 1, got 0"
    for chat in (False, True):
        status, body = asyncio.run(ask(failing(grpc.StatusCode.INVALID_ARGUMENT, message), chat))
        assert (status, body["error"]["type"], body["error"]["message"]) == (400, "invalid_request_error", message)


def test_on_a_decoupled_models_stream_the_code_is_lost() -> None:
    """Documented, not wanted: Triton's stream carries the message only, so the same failure is a 400 there."""
    status, body = asyncio.run(ask(failing(grpc.StatusCode.INTERNAL, "CUDA out of memory"), decoupled=True))
    assert (status, body["error"]["message"]) == (400, "CUDA out of memory"), body


def test_an_unreachable_triton_is_a_502() -> None:
    status, body = asyncio.run(ask(failing(grpc.StatusCode.INTERNAL, "unused"), address=f"127.0.0.1:{closed_port()}"))
    assert status == 502 and body["error"]["type"] == "server_error" and "UNAVAILABLE" in body["error"]["message"]


def test_the_unary_answer_reaches_the_client() -> None:
    seen: list[str] = []

    async def answer(request: Any, _context: Any) -> AsyncIterator[Any]:
        seen.append(request.model_name)
        yield response("four", [5, 6], "length")

    status, body = asyncio.run(ask(answer))
    assert status == 200 and body["choices"][0]["text"] == "four" and body["choices"][0]["finish_reason"] == "length"
    assert body["usage"]["completion_tokens"] == 2 and seen == ["m"]


def test_a_client_leaving_cancels_the_unary_call() -> None:
    """The real Frontend (aiohttp's handler cancellation): the call Triton holds is cancelled when its client goes."""
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def slow(_request: Any, _context: Any) -> AsyncIterator[Any]:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:  # grpc.aio cancels the servicer's task when its RPC is cancelled
            cancelled.set()
            raise
        yield response("late", [5])

    async def run() -> bool:
        async with triton_double(slow) as address:
            frontend = Frontend(Served(address, "m", INPUTS, decoupled=False), "127.0.0.1", 0).start()
            try:
                async with ClientSession() as session:
                    post = asyncio.create_task(session.post(f"{frontend.url}/completions", json={"prompt": "hi"}))
                    await asyncio.wait_for(started.wait(), 5)
                    post.cancel()  # the client goes away while Triton decodes
                try:
                    await asyncio.wait_for(cancelled.wait(), 5)
                except TimeoutError:
                    return False
                return True
            finally:
                frontend.stop()

    assert asyncio.run(run())
