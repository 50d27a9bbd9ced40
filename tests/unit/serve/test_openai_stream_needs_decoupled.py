"""An OpenAI `stream: true` request to a model that is not decoupled is a clear 400 naming the fix (the model
answers one response per request); without `stream` the request is sent as before."""

from __future__ import annotations

import pytest

from specdeploy.serve.openai_frontend import ApiError, Served
from specdeploy.serve.openai_request import triton_body
from tests.unit.serve.triton_double import inputs

INPUTS = inputs("text_input", "max_tokens", "stream", "exclude_input_in_output", "chat_template")


def test_stream_to_a_model_that_is_not_decoupled_is_refused() -> None:
    unary = Served("127.0.0.1:1", "smollm2", INPUTS, decoupled=False)
    with pytest.raises(ApiError) as refused:
        triton_body(unary, {"stream": True, "max_tokens": 4}, "hi", False)
    assert refused.value.status == 400 and refused.value.param == "stream"
    assert "serving.streaming: true" in refused.value.message
    assert refused.value.body()["error"]["type"] == "invalid_request_error"
    body, stream = triton_body(unary, {"max_tokens": 4}, "hi", False)
    assert not stream and "stream" not in body
    body, stream = triton_body(Served("127.0.0.1:1", "smollm2", INPUTS, decoupled=True), {"stream": True}, "hi", False)
    assert stream and body["stream"] is True
