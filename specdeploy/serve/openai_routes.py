"""The aiohttp routes of the OpenAI-compatible endpoint (openai_frontend.py describes it, openai_request.py and
triton_grpc.py translate a request and talk to Triton)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable
from typing import Any

from aiohttp import web
from tritonclient.grpc.aio import InferenceServerClient

from specdeploy.boundedio import InputError, loads_json
from specdeploy.serve.openai_chat import Templater, chat_prompt
from specdeploy.serve.openai_frontend import (
    ApiError,
    Served,
    choice,
    envelope,
    finish_of,
    new_id,
    now,
    usage,
)
from specdeploy.serve.openai_request import prompt_of, triton_body
from specdeploy.serve.triton_grpc import generate

BODY_TIMEOUT_S = 30.0
"""How long a request's body may take to arrive: a client that stalls mid-body is answered 408, not waited for."""
SERVED = web.AppKey("served", Served)
BODY_TIMEOUT = web.AppKey("body_timeout_s", float)
TEMPLATER = web.AppKey("templater", Templater)
TRITON = web.AppKey("triton", InferenceServerClient)


def routes(served: Served, *, body_timeout_s: float = BODY_TIMEOUT_S) -> web.Application:
    app = web.Application(middlewares=[_errors])
    app[SERVED] = served
    app[BODY_TIMEOUT] = body_timeout_s
    app[TEMPLATER] = Templater(served)

    async def open_channel(app: web.Application) -> Any:
        app[TRITON] = InferenceServerClient(served.grpc)  # in the serving loop: its gRPC channel belongs to it
        yield
        await app[TRITON].close()

    async def load_tokenizer(app: web.Application) -> None:
        app[TEMPLATER].start()

    async def chat_completion(request: web.Request) -> web.StreamResponse:
        return await completion(request, chat=True)

    async def text_completion(request: web.Request) -> web.StreamResponse:
        return await completion(request, chat=False)

    app.cleanup_ctx.append(open_channel)
    app.on_startup.append(load_tokenizer)
    app.router.add_get("/v1/models", models)
    app.router.add_get("/v1/models/{model}", model)
    app.router.add_post("/v1/chat/completions", chat_completion)
    app.router.add_post("/v1/completions", text_completion)
    return app


@web.middleware
async def _errors(request: web.Request, handler: Any) -> web.StreamResponse:
    try:
        return await handler(request)
    except ApiError as exc:
        return web.json_response(exc.body(), status=exc.status)
    except web.HTTPException as exc:
        kind = "not_found_error" if exc.status == 404 else "invalid_request_error"
        return web.json_response(ApiError(exc.status, exc.reason, kind=kind).body(), status=exc.status)
    except Exception:  # a bug here: still OpenAI's shape for the client, the traceback in the log
        logging.getLogger(__name__).exception("OpenAI endpoint: %s %s failed", request.method, request.path)
        error = ApiError(500, "internal error in the OpenAI endpoint (the server log has it)", kind="server_error")
        return web.json_response(error.body(), status=500)


def _card(served: Served) -> dict[str, Any]:
    return {"id": served.model, "object": "model", "created": 0, "owned_by": "specdeploy"}


async def models(request: web.Request) -> web.Response:
    return web.json_response({"object": "list", "data": [_card(request.app[SERVED])]})


async def model(request: web.Request) -> web.Response:
    served = request.app[SERVED]
    if request.match_info["model"] != served.model:
        raise ApiError(
            404, f"The model '{request.match_info['model']}' does not exist", "model", kind="not_found_error"
        )
    return web.json_response(_card(served))


async def completion(request: web.Request, chat: bool) -> web.StreamResponse:
    served: Served = request.app[SERVED]
    body = await _body(request)
    if not isinstance(body, dict):
        raise ApiError(400, "the request body must be a JSON object")
    if body.get("model") not in (None, served.model):
        raise ApiError(
            404,
            f"The model '{body.get('model')}' does not exist (served: {served.model})",
            "model",
            kind="not_found_error",
        )
    if chat:
        prompt, raw, counted = await chat_prompt(request.app[TEMPLATER], body)
    else:
        prompt, raw, counted = prompt_of(body), True, None
    triton, stream = triton_body(served, body, prompt, raw)
    rid, created = new_id(chat), now()
    head = envelope(chat, served.model, rid, created, chunk=stream)
    async with contextlib.aclosing(generate(request.app[TRITON], served, triton)) as events:
        if not stream:
            seen = [e async for e in events]
            text = "".join(str(e.get("text_output", "")) for e in seen)
            return web.json_response(
                {
                    **head,
                    "choices": [choice(chat, text, finish_of(seen[-1]), delta=False)],
                    "usage": usage(seen, counted, await _counter(request, seen)),
                }
            )
        first = await _first(events)  # an error before anything was sent is still a JSON error response
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)
        try:
            await _stream(
                request,
                response,
                events,
                first,
                head,
                chat,
                counted,
                bool((body.get("stream_options") or {}).get("include_usage")),
            )
            await response.write(b"data: [DONE]\n\n")
            await response.write_eof()
        except ConnectionResetError:  # the client left before its handler was cancelled: Triton's call is closed
            pass
    return response


async def _body(request: web.Request) -> Any:
    """The request's JSON: bounded in time (BODY_TIMEOUT_S), size (aiohttp's client_max_size, a 413) and nesting,
    and Unicode text (a lone surrogate cannot be tokenized or sent on)."""
    timeout = request.app[BODY_TIMEOUT]
    try:
        raw = await asyncio.wait_for(request.read(), timeout)
    except asyncio.TimeoutError:
        raise ApiError(408, f"the request body did not arrive within {timeout:g} s") from None
    try:
        return loads_json(raw)
    except InputError as exc:
        raise ApiError(400, f"the request body: {exc.detail}") from None


async def _stream(
    request: web.Request,
    response: web.StreamResponse,
    events: Any,
    first: dict[str, Any] | None,
    head: dict[str, Any],
    chat: bool,
    counted: int | None,
    include_usage: bool,
) -> None:
    """The chunks of a streamed answer (an error once streaming: as the last event, OpenAI's shape)."""
    seen = []
    try:
        event = first
        while event is not None:
            seen.append(event)
            following = await _first(events)
            finish = finish_of(event) if following is None else None
            await _send(
                response, {**head, "choices": [choice(chat, str(event.get("text_output", "")), finish, delta=True)]}
            )
            event = following
        if include_usage:
            await _send(response, {**head, "choices": [], "usage": usage(seen, counted, await _counter(request, seen))})
    except ApiError as exc:
        await _send(response, exc.body())


async def _counter(request: web.Request, seen: list[dict[str, Any]]) -> Callable[[str], int] | None:
    """The served tokenizer's count of a text, where the model returns text without its token ids (the engine
    ensemble and the llmapi model): usage then counts what the client got, not zero."""
    if any("output_ids" in e for e in seen):
        return None
    tokenizer, _ = await request.app[TEMPLATER].get()
    return None if tokenizer is None else lambda text: len(tokenizer.encode(text, add_special_tokens=False))


async def _first(events: Any) -> dict[str, Any] | None:
    try:
        return await events.__anext__()
    except StopAsyncIteration:
        return None


async def _send(response: web.StreamResponse, payload: dict[str, Any]) -> None:
    await response.write(f"data: {json.dumps(payload)}\n\n".encode())
