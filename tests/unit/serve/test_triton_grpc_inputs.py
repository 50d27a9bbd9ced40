"""The endpoint's gRPC requests carry what Triton's /generate built from the same JSON (server src/http_server.cc @
v2.51.0, GenerateRequestClass::ExactMappingInput): the metadata's datatype, a value or 1-D list filling the fixed
dimensions and then the innermost variable one; a value the datatype cannot hold is a 400, as /generate's was, never
a silent cast. Checked on what reaches a TEST DOUBLE of Triton at the gRPC boundary
(tests/unit/serve/triton_double.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from specdeploy.serve.openai_frontend import ApiError, Input, Served
from specdeploy.serve.openai_routes import routes
from specdeploy.serve.triton_grpc import tensor
from tests.unit.serve.triton_double import inputs, response, triton_double, values


@pytest.mark.parametrize(
    ("shape", "value", "expected"),
    [
        ((1,), "hi", [1]),
        ((-1, 1), "hi", [1, 1]),
        ((-1,), ["a", "b"], [2]),
        ((-1, -1), ["a", "b"], [1, 2]),
        ((-1,), [], [0]),
    ],
)
def test_shapes_are_filled_as_generate_filled_them(shape: tuple[int, ...], value: Any, expected: list[int]) -> None:
    assert tensor("stop_words", Input("BYTES", shape), value).shape() == expected


@pytest.mark.parametrize(
    ("datatype", "value"),
    [
        ("INT32", 1.5),
        ("INT32", True),
        ("INT32", "4"),
        ("INT32", 2**31),
        ("UINT64", -1),
        ("BOOL", 1),
        ("FP32", "0.5"),
        ("BYTES", 3),
    ],
)
def test_a_value_the_datatype_cannot_hold_is_a_400(datatype: str, value: Any) -> None:
    with pytest.raises(ApiError) as refused:
        tensor("x", Input(datatype, (1,)), value)
    assert refused.value.status == 400 and "input x" in refused.value.message
    with pytest.raises(ApiError, match="cannot take 2 values"):
        tensor("text_input", Input("BYTES", (1,)), ["a", "b"])


def test_the_request_reaching_triton() -> None:
    seen: list[dict[str, Any]] = []

    async def record(request: Any, _context: Any) -> AsyncIterator[Any]:
        seen.append({"model": request.model_name, **values(request)})
        yield response("ok", [5], "length")

    async def run() -> int:
        names = {
            **inputs("max_tokens", "stop_words", "temperature", "seed", "chat_template", "exclude_input_in_output"),
            "text_input": Input("BYTES", (-1, 1)),
        }  # batching: [batch, 1]
        async with (
            triton_double(record) as address,
            TestClient(TestServer(routes(Served(address, "m", names, True)))) as client,
        ):
            reply = await client.post(
                "/v1/completions",
                json={"prompt": "hi", "max_tokens": 4, "stop": ["a", "b"], "temperature": 0, "seed": 7},
            )
            return reply.status

    assert asyncio.run(run()) == 200
    assert seen == [
        {
            "model": "m",
            "text_input": ("BYTES", [1, 1], ["hi"]),
            "max_tokens": ("INT32", [1], [4]),
            "stop_words": ("BYTES", [2], ["a", "b"]),
            "temperature": ("FP32", [1], [0.0]),
            "seed": ("UINT64", [1], [7]),
            "exclude_input_in_output": ("BOOL", [1], [True]),
            "chat_template": ("BOOL", [1], [False]),
        }
    ]
