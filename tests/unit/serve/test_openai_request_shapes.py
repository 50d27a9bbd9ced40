"""Request shapes real OpenAI clients send, answered in OpenAI's error shape with the right status: a field set to
null is a field not given (as every known parameter already was); a non-neutral `logprobs`/`n` is refused even
where Python would call it equal to the neutral one (`logprobs: 0` asks for the sampled token's logprob);
`stream_options` is an object and only goes with `stream` (vLLM and trtllm-serve refuse it otherwise); a Triton
that cannot be reached is a 502, not aiohttp's plain-text 500. The Triton side, where one is needed, is a TEST
DOUBLE at the gRPC boundary (tests/unit/serve/triton_double.py)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from aiohttp import ClientSession
from aiohttp.test_utils import TestClient, TestServer

from specdeploy.serve.openai_frontend import ApiError, Served
from specdeploy.serve.openai_request import triton_body
from specdeploy.serve.openai_routes import routes
from specdeploy.serve.openai_server import Frontend
from tests.helpers import closed_port
from tests.unit.serve.triton_double import Answer, inputs, one_event, response, triton_double

INPUTS = inputs("text_input", "max_tokens", "stream", "chat_template", "exclude_input_in_output")
SERVED = Served("127.0.0.1:1", "m", INPUTS, decoupled=True)


def test_null_fields_are_fields_not_given() -> None:
    body = {"max_tokens": 4, "logit_bias": None, "tools": None, "top_logprobs": None, "response_format": None}
    assert triton_body(SERVED, body, "hi", True)[0]["max_tokens"] == 4


@pytest.mark.parametrize(
    ("body", "param"), [({"logprobs": 0}, "logprobs"), ({"n": True}, "n"), ({"logit_bias": {"1": 2}}, "logit_bias")]
)
def test_non_neutral_values_are_refused(body: dict[str, Any], param: str) -> None:
    with pytest.raises(ApiError) as refused:
        triton_body(SERVED, body, "hi", True)
    assert refused.value.status == 400 and refused.value.param == param


async def ask(body: dict[str, Any], address: str | None = None, answer: Answer = one_event) -> tuple[int, str, str]:
    async with triton_double(answer) as double:
        served = Served(address or double, "m", INPUTS, decoupled=True)
        async with TestClient(TestServer(routes(served))) as client:
            reply = await client.post("/v1/completions", json={"prompt": "hi", "max_tokens": 4, **body})
            return reply.status, reply.content_type, await reply.text()


@pytest.mark.parametrize(
    "body",
    [
        {"stream": True, "stream_options": True},
        {"stream": True, "stream_options": {"include_usage": "yes"}},
        {"stream": False, "stream_options": {"include_usage": True}},
    ],
)
def test_bad_stream_options_are_a_400(body: dict[str, Any]) -> None:
    status, kind, text = asyncio.run(ask(body))
    assert (status, kind) == (400, "application/json"), text
    assert json.loads(text)["error"]["param"] == "stream_options"


def test_stream_options_include_usage_still_adds_the_usage_chunk() -> None:
    status, _, text = asyncio.run(ask({"stream": True, "stream_options": {"include_usage": True}}))
    chunks = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: {")]
    assert status == 200 and chunks[-1]["usage"]["completion_tokens"] == 1 and text.endswith("data: [DONE]\n\n")


@pytest.mark.parametrize("stream", [False, True])
def test_an_unreachable_triton_is_a_502_in_openai_shape(stream: bool) -> None:
    status, kind, text = asyncio.run(ask({"stream": stream}, address=f"127.0.0.1:{closed_port()}"))
    assert (status, kind) == (502, "application/json"), text
    error = json.loads(text)["error"]
    assert error["type"] == "server_error" and "could not reach Triton" in error["message"]


@pytest.mark.parametrize("stream", [False, True])
def test_a_refused_request_carries_tritons_message(stream: bool) -> None:
    """What tritonserver 2.51 answers over the stream for a request its model refuses (the served SmolLM2,
    max_tokens 0): one response carrying only the message, no status code."""
    message = "max_tokens must be at least 1, got 0"

    async def refuse(_request: Any, _context: Any) -> AsyncIterator[Any]:
        from tritonclient.grpc import service_pb2

        yield service_pb2.ModelStreamInferResponse(error_message=message)

    status, _, text = asyncio.run(ask({"max_tokens": 0, "stream": stream}, answer=refuse))
    assert status == 400 and json.loads(text)["error"]["message"] == message, text


def test_a_stream_triton_breaks_off_is_a_server_error() -> None:
    async def fail(_request: Any, context: Any) -> AsyncIterator[Any]:
        await context.abort(grpc.StatusCode.INTERNAL, "shutting down")
        yield

    status, _, text = asyncio.run(ask({}, answer=fail))
    error = json.loads(text)["error"]
    assert status == 502 and error["type"] == "server_error" and "broke off: INTERNAL shutting down" in error["message"]


def test_a_client_leaving_mid_stream_closes_the_triton_stream_without_an_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The real Frontend. Before: Triton's stream stayed open after the client left (until the garbage collector
    found it) and every disconnect logged 'Error handling request' with a traceback."""
    dropped = asyncio.Event()

    async def slow_stream(_request: Any, _context: Any) -> AsyncIterator[Any]:
        try:
            for _ in range(200):
                yield response("a", [5])
                await asyncio.sleep(0.02)
        except asyncio.CancelledError:  # the frontend cancelled its call
            dropped.set()
            raise

    async def run() -> bool:
        async with triton_double(slow_stream) as address:
            frontend = Frontend(Served(address, "m", INPUTS, decoupled=True), "127.0.0.1", 0).start()
            try:
                async with ClientSession() as session:
                    reply = await session.post(f"{frontend.url}/completions", json={"prompt": "hi", "stream": True})
                    await reply.content.readline()
                    reply.close()  # the client goes away after its first chunk
                try:
                    await asyncio.wait_for(dropped.wait(), 2)
                except TimeoutError:
                    return False
                await asyncio.sleep(0.2)
                return True
            finally:
                frontend.stop()

    with caplog.at_level("ERROR", logger="aiohttp.server"):
        assert asyncio.run(run()), "Triton's stream was still open 2 s after the client left"
    assert not [r for r in caplog.records if r.name == "aiohttp.server"], caplog.text


async def garbled_response(_request: Any, _context: Any) -> AsyncIterator[Any]:
    out = response("ok", [5])
    out.infer_response.raw_output_contents[1] = b"\x05\x00\x00"  # three bytes for an INT32
    yield out


def test_a_garbled_triton_event_and_an_endpoint_bug_are_json_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: both were aiohttp's plain-text '500 Internal Server Error', which OpenAI clients cannot read."""

    async def run() -> list[tuple[int, str, dict[str, Any]]]:
        async with triton_double(garbled_response) as address:
            served = Served(address, "m", INPUTS, decoupled=True)
            async with TestClient(TestServer(routes(served))) as client:
                out = []
                for _ in range(2):
                    reply = await client.post("/v1/completions", json={"prompt": "hi"})
                    out.append((reply.status, reply.content_type, await reply.json()))
                    monkeypatch.setattr("specdeploy.serve.openai_routes.triton_body", _a_bug)
                return out

    garbled, bug = asyncio.run(run())
    assert garbled[:2] == (502, "application/json") and "cannot be read" in garbled[2]["error"]["message"]
    assert bug[:2] == (500, "application/json") and bug[2]["error"]["type"] == "server_error"


def _a_bug(*_args: Any) -> Any:
    raise RuntimeError("a bug in the endpoint")
