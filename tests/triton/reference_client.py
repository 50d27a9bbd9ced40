"""Talking to the reference model as users do: gRPC streaming (decoupled or not), unary gRPC ModelInfer (not
decoupled: serving.streaming false) with tritonclient, and HTTP generate."""

from __future__ import annotations

import json
import queue
import time
import urllib.error
import urllib.request
from typing import Any

import numpy as np

TYPES = {str: "BYTES", bytes: "BYTES", bool: "BOOL", float: "FP32", int: "INT32"}


def grpc_inputs(values: dict[str, Any]) -> list[Any]:
    import tritonclient.grpc as grpcclient

    inputs = []
    for name, value in values.items():
        kind = (
            "UINT64" if name in ("seed", "random_seed") else TYPES[type(value[0] if isinstance(value, list) else value)]
        )
        items = value if isinstance(value, list) else [value]
        dtype = {"BYTES": object, "BOOL": bool, "FP32": np.float32, "INT32": np.int32, "UINT64": np.uint64}[kind]
        array = np.array([v.encode() if isinstance(v, str) else v for v in items], dtype=dtype)
        tensor = grpcclient.InferInput(name, list(array.shape), kind)
        tensor.set_data_from_numpy(array)
        inputs.append(tensor)
    return inputs


def stream(url: str, model: str, values: dict[str, Any], timeout: float = 300) -> list[tuple[float, dict[str, Any]]]:
    """Every response of one request over a gRPC stream: (arrival time, outputs); raises the server's error."""
    import tritonclient.grpc as grpcclient

    client = grpcclient.InferenceServerClient(url)
    got: queue.Queue[Any] = queue.Queue()
    client.start_stream(callback=lambda result, error: got.put((time.monotonic(), error or result)))
    out = []
    try:
        client.async_stream_infer(model, grpc_inputs(values), enable_empty_final_response=True)
        while True:
            when, item = got.get(timeout=timeout)
            if isinstance(item, Exception):
                raise item
            response = item.get_response()
            if response.outputs:
                out.append((when, {o.name: _value(o.name, item.as_numpy(o.name)) for o in response.outputs}))
            if response.parameters.get("triton_final_response").bool_param:
                return out
    finally:
        client.stop_stream()


def answer(url: str, model: str, values: dict[str, Any]) -> dict[str, Any]:
    """The one response of a request without `stream`."""
    responses = stream(url, model, values)
    assert len(responses) == 1, responses
    return responses[0][1]


def unary(url: str, model: str, values: dict[str, Any]) -> dict[str, Any]:
    """The one response of a unary gRPC ModelInfer (tritonclient `infer`, what perf_analyzer sends without
    --streaming); raises the server's error."""
    import tritonclient.grpc as grpcclient

    result = grpcclient.InferenceServerClient(url).infer(model, grpc_inputs(values), client_timeout=300)
    return {o.name: _value(o.name, result.as_numpy(o.name)) for o in result.get_response().outputs}


def http_generate(http: str, model: str, body: dict[str, Any], streaming: bool = False) -> Any:
    """POST /generate (one JSON answer) or /generate_stream (the SSE events, each (arrival, data))."""
    path = "generate_stream" if streaming else "generate"
    request = urllib.request.Request(
        f"http://{http}/v2/models/{model}/{path}", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=300) as response:
            if not streaming:
                return json.loads(response.read())
            return [(time.monotonic(), json.loads(line[5:])) for line in response if line.startswith(b"data:")]
    except urllib.error.HTTPError as exc:
        return {"status": exc.code, **json.loads(exc.read() or b"{}")}


def _value(name: str, array: np.ndarray) -> Any:
    flat = [v.decode() if isinstance(v, bytes) else v.item() for v in array.reshape(-1)]
    return flat if name == "output_ids" else flat[0]
