"""The standard LLM inputs as the reference model reads them: honoured, or refused by name (never dropped)."""

from __future__ import annotations

import numpy as np
import pytest

from specdeploy.serve.llm_inputs import BadRequest, parse
from tests.helpers import llm_request


def test_trtllm_and_vllm_names_are_honoured() -> None:
    r = parse(
        llm_request(
            max_tokens=9,
            stream=True,
            exclude_input_in_output=False,
            min_length=3,
            temperature=0.7,
            top_p=0.9,
            top_k=5,
            random_seed=np.uint64(4),
            end_id=2,
            stop_words=["x", ""],
        ),
        32,
    )
    assert (
        r.max_tokens,
        r.stream,
        r.exclude_input,
        r.min_tokens,
        r.temperature,
        r.top_k,
        r.seed,
        r.end_id,
        r.stop,
    ) == (9, True, False, 3, pytest.approx(0.7), 5, 4, 2, ("x",))
    raw = '{"max_tokens": "5", "top_k": -1, "stop": "END", "ignore_eos": true}'
    v = parse(llm_request(sampling_parameters=raw), 32)
    assert (v.max_tokens, v.top_k, v.stop, v.min_tokens) == (5, 0, ("END",), 5)
    assert parse(llm_request(), 32).max_tokens == 32 and parse(llm_request(chat_template=False), 32).chat is False


@pytest.mark.parametrize(
    ("values", "match"),
    [
        ({"bad_words": ["no"]}, "bad_words is not supported"),
        ({"sampling_parameters": '{"best_of": 2}'}, "best_of not supported"),
        ({"sampling_parameters": '{"n": 2}'}, "n must be 1"),
        ({"sampling_parameters": "[1]"}, "JSON object"),
        ({"min_tokens": 2, "min_length": 3}, "contradicts"),
        ({"max_tokens": 0}, "at least 1"),
        ({"top_k": -2}, "top_k must be"),
        ({"stream": "maybe"}, "true or false"),
        ({"max_tokens": [1, 2]}, "exactly one value"),
    ],
)
def test_bad_values_are_refused(values: dict, match: str) -> None:
    with pytest.raises(BadRequest, match=match):
        parse(llm_request(**values), 32)


def test_a_missing_prompt_is_named() -> None:
    with pytest.raises(BadRequest, match="text_input"):
        parse({}, 32)
