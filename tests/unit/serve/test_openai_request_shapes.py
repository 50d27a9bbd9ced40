"""Request shapes real OpenAI clients send, answered in OpenAI's error shape with the right status: a field set to
null is a field not given (as every known parameter already was); a non-neutral `logprobs`/`n` is refused even
where Python would call it equal to the neutral one (`logprobs: 0` asks for the sampled token's logprob);
`stream_options` is an object and only goes with `stream` (vLLM and trtllm-serve refuse it otherwise); a Triton
that cannot be reached is a 502, not aiohttp's plain-text 500. The Triton side, where one is needed, is a TEST
DOUBLE at the HTTP boundary (an aiohttp app answering /generate_stream with one event)."""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any

import pytest
from aiohttp import ClientSession, web
from aiohttp.test_utils import TestClient, TestServer

from specdeploy.serve.openai_frontend import ApiError, Frontend, Served, triton_body
from specdeploy.serve.openai_routes import routes

INPUTS = frozenset({"text_input", "max_tokens", "stream", "chat_template", "exclude_input_in_output"})
SERVED = Served("127.0.0.1:1", "m", INPUTS, decoupled=True)


def test_null_fields_are_fields_not_given() -> None:
    body = {"max_tokens": 4, "logit_bias": None, "tools": None, "top_logprobs": None, "response_format": None}
    assert triton_body(SERVED, body, "hi", True)[0]["max_tokens"] == 4


@pytest.mark.parametrize(("body", "param"), [({"logprobs": 0}, "logprobs"), ({"n": True}, "n"),
                                             ({"logit_bias": {"1": 2}}, "logit_bias")])
def test_non_neutral_values_are_refused(body: dict[str, Any], param: str) -> None:
    with pytest.raises(ApiError) as refused:
        triton_body(SERVED, body, "hi", True)
    assert refused.value.status == 400 and refused.value.param == param


async def one_event(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    await response.write(b'data: {"text_output": "ok", "output_ids": [5], "finish_reason": "length"}\n\n')
    await response.write_eof()
    return response


async def ask(body: dict[str, Any], http: str | None = None) -> tuple[int, str, str]:
    triton = web.Application()
    triton.router.add_post("/v2/models/m/generate_stream", one_event)
    async with TestServer(triton) as fake_triton:
        served = Served(http or f"127.0.0.1:{fake_triton.port}", "m", INPUTS, decoupled=True)
        async with TestClient(TestServer(routes(served))) as client:
            response = await client.post("/v1/completions", json={"prompt": "hi", "max_tokens": 4, **body})
            return response.status, response.content_type, await response.text()


@pytest.mark.parametrize("body", [{"stream": True, "stream_options": True},
                                  {"stream": True, "stream_options": {"include_usage": "yes"}},
                                  {"stream": False, "stream_options": {"include_usage": True}}])
def test_bad_stream_options_are_a_400(body: dict[str, Any]) -> None:
    status, kind, text = asyncio.run(ask(body))
    assert (status, kind) == (400, "application/json"), text
    assert json.loads(text)["error"]["param"] == "stream_options"


def test_stream_options_include_usage_still_adds_the_usage_chunk() -> None:
    status, _, text = asyncio.run(ask({"stream": True, "stream_options": {"include_usage": True}}))
    chunks = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: {")]
    assert status == 200 and chunks[-1]["usage"]["completion_tokens"] == 1 and text.endswith("data: [DONE]\n\n")


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("stream", [False, True])
def test_an_unreachable_triton_is_a_502_in_openai_shape(stream: bool) -> None:
    status, kind, text = asyncio.run(ask({"stream": stream}, http=f"127.0.0.1:{closed_port()}"))
    assert (status, kind) == (502, "application/json"), text
    error = json.loads(text)["error"]
    assert error["type"] == "server_error" and "could not reach Triton" in error["message"]


async def refused_stream(_request: web.Request) -> web.Response:
    """What tritonserver 2.51 answers /generate_stream for a request its model refuses: 400, the error as one SSE
    event (seen with the served SmolLM2 and max_tokens 0)."""
    return web.Response(status=400, text='data: {"error":"max_tokens must be at least 1, got 0"}\n\n',
                        content_type="text/event-stream")


def test_a_refused_streamed_request_carries_tritons_message_not_its_sse_frame() -> None:
    async def run() -> tuple[int, dict[str, Any]]:
        triton = web.Application()
        triton.router.add_post("/v2/models/m/generate_stream", refused_stream)
        async with TestServer(triton) as fake_triton:
            served = Served(f"127.0.0.1:{fake_triton.port}", "m", INPUTS, decoupled=True)
            async with TestClient(TestServer(routes(served))) as client:
                response = await client.post("/v1/completions", json={"prompt": "hi", "max_tokens": 0})
                return response.status, await response.json()

    status, body = asyncio.run(run())
    assert status == 400 and body["error"]["message"] == "max_tokens must be at least 1, got 0", body


def test_a_client_leaving_mid_stream_closes_the_triton_stream_without_an_error(
        caplog: pytest.LogCaptureFixture) -> None:
    """The real Frontend (aiohttp's default: a handler is not cancelled when its client leaves). Before: Triton's
    stream stayed open after the client left (until the garbage collector found it) and every disconnect logged
    'Error handling request' with a traceback."""
    dropped = asyncio.Event()

    async def slow_stream(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        try:
            for _ in range(200):
                await response.write(b'data: {"text_output": "a", "output_ids": [5]}\n\n')
                await asyncio.sleep(0.02)
        except (ConnectionResetError, asyncio.CancelledError):  # the frontend closed its request
            dropped.set()
            raise
        return response

    async def run() -> bool:
        triton = web.Application()
        triton.router.add_post("/v2/models/m/generate_stream", slow_stream)
        async with TestServer(triton) as fake_triton:
            served = Served(f"127.0.0.1:{fake_triton.port}", "m", INPUTS, decoupled=True)
            frontend = Frontend(served, "127.0.0.1", 0).start()
            try:
                async with ClientSession() as session:
                    response = await session.post(f"{frontend.url}/completions", json={"prompt": "hi", "stream": True})
                    await response.content.readline()
                    response.close()  # the client goes away after its first chunk
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


async def garbled_stream(_request: web.Request) -> web.Response:
    return web.Response(text="data: {not json\n\n", content_type="text/event-stream")


def test_a_garbled_triton_event_and_an_endpoint_bug_are_json_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: both were aiohttp's plain-text '500 Internal Server Error', which OpenAI clients cannot read."""
    async def run() -> list[tuple[int, str, dict[str, Any]]]:
        triton = web.Application()
        triton.router.add_post("/v2/models/m/generate_stream", garbled_stream)
        async with TestServer(triton) as fake_triton:
            served = Served(f"127.0.0.1:{fake_triton.port}", "m", INPUTS, decoupled=True)
            async with TestClient(TestServer(routes(served))) as client:
                out = []
                for _ in range(2):
                    response = await client.post("/v1/completions", json={"prompt": "hi"})
                    out.append((response.status, response.content_type, await response.json()))
                    monkeypatch.setattr("specdeploy.serve.openai_routes.triton_body", _a_bug)
                return out

    garbled, bug = asyncio.run(run())
    assert garbled[:2] == (502, "application/json") and "not JSON" in garbled[2]["error"]["message"]
    assert bug[:2] == (500, "application/json") and bug[2]["error"]["type"] == "server_error"


def _a_bug(*_args: Any) -> Any:
    raise RuntimeError("a bug in the endpoint")
