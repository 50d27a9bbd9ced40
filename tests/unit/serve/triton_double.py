"""A TEST DOUBLE of tritonserver at the OpenAI endpoint's gRPC boundary: a grpc.aio server (tritonclient's own
GRPCInferenceService stubs) whose ModelReady answers as told, whose ModelStreamInfer answers each request with what a
test's `answer(request, context)` async generator yields, and whose unary ModelInfer answers with the first one's
infer_response; a `TritonError` the answer raises is sent as Triton 2.51 sends an error: ModelInfer ends with its
status, the stream answers a response holding the message only (server src/grpc/stream_infer_handler.cc @ v2.51.0,
without the triton_grpc_error header); and the reference model's input metadata (templates/triton/reference)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
import numpy as np
from tritonclient.grpc import service_pb2, service_pb2_grpc
from tritonclient.utils import serialize_byte_tensor

from specdeploy.serve.openai_frontend import Input

REFERENCE = {
    "text_input": Input("BYTES", (1,)),
    "max_tokens": Input("INT32", (1,)),
    "stream": Input("BOOL", (1,)),
    "chat_template": Input("BOOL", (1,)),
    "exclude_input_in_output": Input("BOOL", (1,)),
    "stop_words": Input("BYTES", (-1,)),
    "temperature": Input("FP32", (1,)),
    "top_p": Input("FP32", (1,)),
    "seed": Input("UINT64", (1,)),
    "min_tokens": Input("INT32", (1,)),
}
Answer = Callable[[Any, Any], AsyncIterator[Any]]


def inputs(*names: str) -> dict[str, Input]:
    """The reference model's metadata for these inputs."""
    return {name: REFERENCE[name] for name in names}


class TritonError(Exception):
    """An error Triton or its model answers, with its gRPC status code."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


class _Service(service_pb2_grpc.GRPCInferenceServiceServicer):
    def __init__(self, answer: Answer, ready: bool) -> None:
        self.answer, self.ready = answer, ready

    async def ModelReady(self, request: Any, context: Any) -> Any:  # noqa: N802 - gRPC's name
        return service_pb2.ModelReadyResponse(ready=self.ready)

    async def ModelStreamInfer(self, requests: Any, context: Any) -> AsyncIterator[Any]:  # noqa: N802 - gRPC's name
        async for request in requests:
            try:
                async for response in self.answer(request, context):
                    yield response
            except TritonError as exc:  # the code is lost on the stream
                yield service_pb2.ModelStreamInferResponse(error_message=exc.message)

    async def ModelInfer(self, request: Any, context: Any) -> Any:  # noqa: N802 - gRPC's name
        try:
            async with contextlib.aclosing(self.answer(request, context)) as responses:
                async for response in responses:
                    return response.infer_response
        except TritonError as exc:
            await context.abort(exc.code, exc.message)
        return service_pb2.ModelInferResponse()


@contextlib.asynccontextmanager
async def triton_double(answer: Answer, ready: bool = True) -> AsyncIterator[str]:
    """The double listening on 127.0.0.1: its address; `ready`: what ModelReady answers for any model."""
    server = grpc.aio.server()
    service_pb2_grpc.add_GRPCInferenceServiceServicer_to_server(_Service(answer, ready), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        await server.stop(None)


def response(text: str, ids: list[int], finish: str = "") -> Any:
    """One response of the reference model's shape: text_output, output_ids, finish_reason."""
    out = service_pb2.ModelStreamInferResponse()
    infer = out.infer_response
    for name, datatype, array in (
        ("text_output", "BYTES", np.array([text.encode()], dtype=np.object_)),
        ("output_ids", "INT32", np.array(ids, dtype=np.int32)),
        ("finish_reason", "BYTES", np.array([finish.encode()], dtype=np.object_)),
    ):
        tensor = infer.outputs.add()
        tensor.name, tensor.datatype = name, datatype
        tensor.shape.extend(array.shape)
        infer.raw_output_contents.append(
            serialize_byte_tensor(array).item() if datatype == "BYTES" else array.tobytes()
        )
    return out


def values(request: Any) -> dict[str, Any]:
    """A request's inputs as (datatype, shape, values) and its parameters, for tests to check what was sent."""
    out: dict[str, Any] = {}
    for tensor, raw in zip(request.inputs, request.raw_input_contents, strict=True):
        if tensor.datatype == "BYTES":
            items, data = [], raw
            while data:
                size = int.from_bytes(data[:4], "little")
                items.append(data[4 : 4 + size].decode())
                data = data[4 + size :]
        else:
            dtype = {"BOOL": np.bool_, "INT32": np.int32, "FP32": np.float32, "UINT64": np.uint64}[tensor.datatype]
            items = np.frombuffer(raw, dtype=dtype).tolist()
        out[tensor.name] = (tensor.datatype, list(tensor.shape), items)
    for name, parameter in request.parameters.items():
        out[name] = parameter.string_param or parameter.int64_param or parameter.bool_param
    return out


async def one_event(_request: Any, _context: Any) -> AsyncIterator[Any]:
    """An answer of one response: "ok", token 5, finished by length."""
    yield response("ok", [5], "length")
