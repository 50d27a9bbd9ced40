"""The served reference model as the ecosystem's clients use it (issue #21), on a real tritonserver with SmolLM2:
requests batched in flight (concurrent answers identical to sequential ones, a batch > 1 seen), real
streaming over gRPC and /generate_stream (several responses, the first well before the last), and the
standard TensorRT-LLM / vLLM inputs honoured or refused with INVALID_ARGUMENT.
Before: max_batch_size 0, decoupled false, one prompt per call; stream and sampling inputs unknown."""

from __future__ import annotations

import os
import sysconfig
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from specdeploy.api import load_and_resolve
from specdeploy.render.actions import render_resolved
from specdeploy.render.model import RenderInputs
from tests.triton.reference_client import answer, http_generate, stream

PROMPTS = ["What is 2 + 2?", "Name three colors.", "Write a haiku about GPUs.", "Why is the sky blue?"]
SETS = ("speculative.draft_len=2", "serving.max_batch_size=4", "tune.output_len=16")


@pytest.fixture(scope="module")
def served(backends: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """(grpc url, http address) of a tritonserver serving cpu-smollm2's reference model."""
    pytest.importorskip("torch")
    from specdeploy.render.server import start_server

    tmp = tmp_path_factory.mktemp("served")
    repo = render_resolved(
        load_and_resolve("cpu-smollm2", SETS),
        tmp / "repo",
        inputs=RenderInputs(site_packages=sysconfig.get_paths()["purelib"]),
    ).out
    server = start_server(repo, backends, tmp / "server.log", extra_args=("--disable-auto-complete-config",))
    try:
        server.load("smollm2", timeout=300)
        yield server.grpc_url, f"127.0.0.1:{server.http_port}"
    finally:
        server.stop()
        if os.environ.get("SPECDEPLOY_KEEP_LOGS"):
            print(server.log()[-4000:])


def test_concurrent_requests_batch_in_flight_and_match_sequential(served: tuple[str, str]) -> None:
    url, _ = served
    sequential = [answer(url, "smollm2", {"text_input": p}) for p in PROMPTS]
    assert all(a["batch_size"] == 1 and a["draft_len"] == 2 for a in sequential)
    with ThreadPoolExecutor(len(PROMPTS)) as pool:
        concurrent = list(pool.map(lambda p: answer(url, "smollm2", {"text_input": p}), PROMPTS))
    for alone, together in zip(sequential, concurrent, strict=True):
        assert together["output_ids"] == alone["output_ids"] and together["text_output"] == alone["text_output"]
    assert max(a["batch_size"] for a in concurrent) > 1  # the server decoded them together
    plain = answer(url, "smollm2", {"text_input": PROMPTS[0], "draft_len": 0})
    assert plain["draft_len"] == 0 and plain["output_ids"] == sequential[0]["output_ids"]


def test_streaming_sends_tokens_per_step(served: tuple[str, str]) -> None:
    url, http = served
    whole = answer(url, "smollm2", {"text_input": PROMPTS[3], "max_tokens": 24})
    sent = time.monotonic()
    chunks = stream(url, "smollm2", {"text_input": PROMPTS[3], "max_tokens": 24, "stream": True})
    assert len(chunks) >= 4
    assert "".join(c["text_output"] for _, c in chunks) == whole["text_output"]
    assert sum((c["output_ids"] for _, c in chunks), []) == whole["output_ids"]
    first, last = chunks[0][0], chunks[-1][0]
    assert first - sent < 0.5 * (last - sent)  # the first token arrived well before the answer was complete
    assert chunks[-1][1]["finish_reason"] == "length"
    sent = time.monotonic()
    events = http_generate(
        http, "smollm2", {"text_input": PROMPTS[3], "max_tokens": 24, "stream": True}, streaming=True
    )
    assert len(events) >= 4 and "".join(e["text_output"] for _, e in events) == whole["text_output"]
    assert events[0][0] - sent < 0.5 * (events[-1][0] - sent)
    one = http_generate(http, "smollm2", {"text_input": PROMPTS[3], "max_tokens": 24})
    assert one["text_output"] == whole["text_output"]  # /generate: a request without stream gets one response


def test_standard_inputs_are_honoured(served: tuple[str, str]) -> None:
    url, http = served
    five = answer(url, "smollm2", {"text_input": PROMPTS[3], "sampling_parameters": '{"max_tokens": 5}'})
    assert len(five["output_ids"]) == 5 and five["finish_reason"] == "length"
    base = answer(url, "smollm2", {"text_input": PROMPTS[1], "max_tokens": 24})
    word = base["text_output"].split()[2]
    cut = answer(url, "smollm2", {"text_input": PROMPTS[1], "max_tokens": 24, "stop_words": [word]})
    assert cut["text_output"] == base["text_output"][: base["text_output"].find(word)]
    assert cut["finish_reason"] == "stop"
    echoed = answer(url, "smollm2", {"text_input": PROMPTS[0], "max_tokens": 4, "exclude_input_in_output": False})
    assert echoed["text_output"].startswith(PROMPTS[0])
    sampled = {"text_input": PROMPTS[2], "max_tokens": 12, "temperature": 1.0, "top_p": 0.9, "top_k": 20, "seed": 7}
    first, again = answer(url, "smollm2", sampled), answer(url, "smollm2", sampled)
    assert first["output_ids"] == again["output_ids"]  # a seed makes sampling repeatable
    other = answer(url, "smollm2", {**sampled, "seed": 8, "temperature": 1.5})
    assert other["output_ids"] != first["output_ids"]
    forced = answer(url, "smollm2", {"text_input": PROMPTS[0], "max_tokens": 40, "min_tokens": 40})
    assert len(forced["output_ids"]) == 40  # EOS held back until min_tokens are out
    genai = answer(
        url,
        "smollm2",
        {
            "text_input": PROMPTS[0],
            "max_tokens": 6,
            "min_length": 6,
            "stream": False,
            "exclude_input_in_output": True,
            "end_id": 2,
        },
    )
    assert len(genai["output_ids"]) == 6
    vllm = http_generate(
        http,
        "smollm2",
        {
            "text_input": PROMPTS[0],
            "exclude_input_in_output": True,
            "sampling_parameters": '{"max_tokens": 3, "temperature": 0}',
        },
    )
    assert len(vllm["text_output"]) > 0 and "status" not in vllm


@pytest.mark.parametrize(
    ("values", "match"),
    [
        ({"bad_words": ["red"]}, "bad_words is not supported"),
        ({"sampling_parameters": '{"presence_penalty": 0.5}'}, "presence_penalty not supported"),
        ({"sampling_parameters": "{max_tokens"}, "not valid JSON"),
        ({"max_tokens": 8, "sampling_parameters": '{"max_tokens": 5}'}, "contradicts"),
        ({"temperature": -1.0}, "temperature must be"),
        ({"top_p": 0.0}, "top_p must be"),
        ({"end_id": 7}, "end_id 7 is not this model's end token"),
        ({"min_tokens": 50, "max_tokens": 10}, "min_tokens must be"),
        ({"draft_len": 99}, "draft_len must be between"),
    ],
)
def test_unsupported_inputs_are_refused(served: tuple[str, str], values: dict, match: str) -> None:
    from tritonclient.utils import InferenceServerException

    url, http = served
    with pytest.raises(InferenceServerException, match=match):  # a gRPC stream carries the message only
        stream(url, "smollm2", {"text_input": PROMPTS[0], **values})
    refused = http_generate(http, "smollm2", {"text_input": PROMPTS[0], **values})
    assert refused["status"] == 400 and match in refused["error"], refused  # INVALID_ARGUMENT
