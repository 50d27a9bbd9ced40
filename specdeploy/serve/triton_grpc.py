"""The OpenAI endpoint's transport to Triton, over gRPC so that a client that leaves cancels its request in Triton and
the model stops decoding (tritonclient.grpc.aio): a model that is not decoupled gets one unary ModelInfer call
(`infer`), a decoupled one a ModelStreamInfer call carrying the one request (`stream_infer`). Triton 2.51 cancels
both on a cancelled RPC: each RPC's context registers AsyncNotifyWhenDone, and a cancelled one has every request it
issued cancelled with TRITONSERVER_InferenceRequestCancel (server src/grpc/infer_handler.h @ v2.51.0,
HandleCancellation / IssueRequestCancellation; ModelInferHandler::Process in infer_handler.cc calls it too). Over
HTTP, measured on the bundled 2.51: a /generate_stream whose connection closes is cancelled (src/http_server.cc
RequestFiniHook, server commit b876a90fe), a /generate is not and decodes on to max_tokens, holding its slot.

Inputs are built as Triton's /generate built them from the same JSON (server src/http_server.cc @ v2.51.0,
GenerateRequestClass::ExactMappingInput): datatype and shape from the model's metadata, a value or a 1-D list filling
the fixed dimensions and then the innermost variable one, the others 1. Outputs come back as /generate wrote them
(ExactMappingOutput): one element as a value, more as a list, strings as text. gRPC carries every datatype /generate's
JSON did (it refused FP16 and BF16 inputs).

Errors. Unary: Triton's gRPC status (its error code, src/grpc/grpc_utils.cc @ v2.51.0, GrpcStatusUtil::CodeToStatus)
and message: INVALID_ARGUMENT is a 400, any other status a 502 server_error, as a 5xx from the HTTP /generate this
replaced was. Stream (decoupled): Triton sends a request's error as a response holding only the message, no code
(src/grpc/stream_infer_handler.cc @ v2.51.0): Triton's refusal before inference (an unknown model, an input the
config does not take) and an error response (the model's own, whatever its code: INVALID_ARGUMENT for a bad request,
INTERNAL for a failure) both lose their code. Before any response, such an error from a model that is not ready
(unloaded, failed: is_model_ready) is a 502, as /generate_stream's 404/503 were; otherwise a 400, as /generate_stream's
in-stream errors were, so a ready model's INTERNAL error in its first response reads as a 400. The
`triton_grpc_error` header that makes Triton end the stream with the code instead (docs/customization_guide/
inference_protocols.md @ v2.51.0, "GRPC Status Codes") crashed the bundled tritonserver 2.51 (signal 11 after
"HandleCancellation called even when the context was not cancelled") on a decoupled model's INVALID_ARG error, so it
is not sent. A stream whose RPC fails (Triton unreachable, or gone mid-request) keeps its status and is a 502. Triton
silent on a request for IDLE_S: a 504, and the request is cancelled. Text inputs must be valid Unicode and float
inputs finite and within their type (400), as Triton's JSON parser required of /generate's body.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import grpc
import numpy as np
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

from specdeploy.serve.openai_frontend import ApiError, Input, Served

NUMPY = {
    "BOOL": np.bool_,
    "INT8": np.int8,
    "INT16": np.int16,
    "INT32": np.int32,
    "INT64": np.int64,
    "UINT8": np.uint8,
    "UINT16": np.uint16,
    "UINT32": np.uint32,
    "UINT64": np.uint64,
    "FP16": np.float16,
    "FP32": np.float32,
    "FP64": np.float64,
    "BYTES": np.object_,
}
IDLE_S = 600.0
"""The longest Triton may stay silent on a request (no answer, no next response) before the endpoint gives up with a
504 and cancels it: the read timeout the HTTP transport had (aiohttp sock_read 600 s). Not gRPC keepalive: Triton
keeps gRPC's server defaults (server docs/customization_guide/inference_protocols.md @ v2.51.0, "GRPC KeepAlive",
lines 102-116), under which a client pinging more often than every 5 minutes without data is sent GOAWAY after 2
strikes (grpc doc/keepalive.md, GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, MAX_PING_STRIKES)."""


async def generate(client: Any, served: Served, request: dict[str, Any]) -> AsyncGenerator[dict[str, Any]]:
    """Triton's responses to one request; closing this (or cancelling its task) cancels the request in Triton."""
    missing = sorted(set(request) - set(served.inputs))  # openai_request.triton_body sends declared inputs only
    if missing:
        raise ApiError(400, f"model {served.model} has no input {missing[0]}")
    inputs = [tensor(name, served.inputs[name], value) for name, value in request.items()]
    if not served.decoupled:
        yield event(served, await _within(_infer(client, served, inputs), served))
        return

    async def one() -> AsyncIterator[dict[str, Any]]:  # one request, then the stream is half-closed
        yield {"model_name": served.model, "inputs": inputs}

    call = client.stream_infer(one())
    responses = aiter(call)
    sent = 0
    try:
        while True:
            try:
                result, error = await _within(anext(responses), served)
            except StopAsyncIteration:
                break
            if error is not None:  # Triton's error without its code (the module's docstring says which)
                raise await _refused(client, served, error.message(), sent)
            sent += 1
            yield event(served, result)
    except grpc.aio.AioRpcError as exc:
        raise _failed(served, exc, sent) from None
    finally:
        call.cancel()  # a no-op once the stream has ended
    if not sent:  # every model answers at least one response: an empty answer here would be a made-up one
        raise ApiError(502, f"model {served.model} ended the request without a response", kind="server_error")


async def _within(waiting: Any, served: Served) -> Any:
    """`waiting`, unless Triton stays silent for IDLE_S: then a 504 (the caller's cancel frees the request)."""
    try:
        return await asyncio.wait_for(waiting, IDLE_S)
    except asyncio.TimeoutError:
        raise ApiError(
            504, f"model {served.model} in Triton at {served.grpc} sent nothing for {IDLE_S:g} s", kind="server_error"
        ) from None


async def _refused(client: Any, served: Served, message: str, sent: int) -> ApiError:
    """An error in the stream comes without its code: before any response, a model that is not ready (unloaded,
    failed) makes it Triton's fault, a 502 as /generate_stream's 404/503 were; otherwise the request's, a 400."""
    if not sent:
        try:
            ready = bool(await asyncio.wait_for(client.is_model_ready(served.model), 10))
        except Exception:  # noqa: BLE001 - Triton gone or silent: not the request's fault either
            ready = False
        if not ready:
            return ApiError(
                502, f"model {served.model} is not ready in Triton at {served.grpc}: {message}", kind="server_error"
            )
    return ApiError(400, message)


async def _infer(client: Any, served: Served, inputs: list[Any]) -> Any:
    """One unary ModelInfer (its task cancelled: the RPC is, and Triton cancels the request); Triton's status kept:
    INVALID_ARGUMENT is the client's fault (400), any other status Triton's or its model's (502)."""
    try:
        return await client.infer(served.model, inputs)
    except InferenceServerException as exc:  # tritonclient's wrapping of the RPC's error: status "StatusCode.X"
        code = str(exc.status()).rsplit(".", 1)[-1]
        if code == grpc.StatusCode.INVALID_ARGUMENT.name:
            raise ApiError(400, str(exc.message())) from None
        raise ApiError(
            502, f"model {served.model} in Triton at {served.grpc} failed: {code} {exc.message()}", kind="server_error"
        ) from None


def tensor(name: str, spec: Input, value: Any) -> Any:
    """One input as /generate made it from a JSON value or 1-D list; a value its datatype cannot hold is a 400."""
    items = value if isinstance(value, list) else [value]
    dtype = NUMPY.get(spec.datatype)
    if dtype is None or not all(_fits(spec.datatype, item) for item in items):
        raise ApiError(400, f"input {name} ({spec.datatype}) cannot take {value!r}")
    try:
        data = [item.encode() if isinstance(item, str) else item for item in items]
    except UnicodeEncodeError:  # a lone surrogate ("\ud800") is valid JSON, not text
        raise ApiError(400, f"input {name} is not valid Unicode text") from None
    array = np.array(data, dtype=dtype).reshape(_shape(name, spec.shape, len(items)))
    out = grpcclient.InferInput(name, list(array.shape), spec.datatype)
    out.set_data_from_numpy(array)
    return out


def _fits(datatype: str, item: Any) -> bool:
    if datatype == "BYTES":
        return isinstance(item, str)
    if datatype == "BOOL":
        return isinstance(item, bool)
    if isinstance(item, bool) or not isinstance(item, (int, float)):
        return False
    if datatype.startswith("FP"):  # finite and within the type: 1e39 is inf in FP32, NaN is JSON-able in Python
        return math.isfinite(item) and abs(item) <= float(np.finfo(NUMPY[datatype]).max)  # type: ignore[arg-type]
    info = np.iinfo(NUMPY[datatype])  # type: ignore[type-var]  # an integer type here
    return isinstance(item, int) and info.min <= item <= info.max


def _shape(name: str, dims: tuple[int, ...], count: int) -> list[int]:
    shape, left = list(dims), count
    for d in shape:
        if d != -1:
            if d == 0 or left % d:
                raise ApiError(400, f"input {name} cannot take {count} values (shape {list(dims)})")
            left //= d
    for i in reversed(range(len(shape))):  # the innermost variable dimension takes what is left
        if shape[i] == -1:
            shape[i], left = left, 1
    if left != 1:
        raise ApiError(400, f"input {name} cannot take {count} values (shape {list(dims)})")
    return shape


def event(served: Served, result: Any) -> dict[str, Any]:
    """A response's outputs as /generate's JSON had them; one that cannot be read is a 502."""
    out: dict[str, Any] = {}
    try:
        for output in result.get_response().outputs:
            values = [
                v.decode("utf-8", "replace") if isinstance(v, bytes) else v.item()
                for v in result.as_numpy(output.name).reshape(-1)
            ]
            out[output.name] = values[0] if len(values) == 1 else values
    except Exception as exc:  # noqa: BLE001 - a malformed tensor, whatever numpy says about it
        raise ApiError(
            502, f"model {served.model} sent a response that cannot be read: {exc}", kind="server_error"
        ) from None
    return out


def _failed(served: Served, exc: grpc.aio.AioRpcError, sent: int) -> ApiError:
    code, details = exc.code(), exc.details() or str(exc.code())
    if code == grpc.StatusCode.UNAVAILABLE and not sent:
        return ApiError(502, f"could not reach Triton at {served.grpc}: {details}", kind="server_error")
    return ApiError(
        502, f"the request to Triton at {served.grpc} broke off: {code.name} {details}", kind="server_error"
    )
