"""`specdeploy serve` answers the OpenAI API (issue #21 item 4), checked with the real `openai` client against
the served SmolLM2: models, chat, completions, streaming (SSE ending in [DONE]), usage, errors in OpenAI's
shape. Before: 404, there was no such endpoint. Chat takes system messages and whole conversations, rendered
with the model's own chat template (before: a 400 for any system message or second turn). A client that leaves
mid-request cancels its Triton request (before, unstreamed: it decoded on to max_tokens beside the next ones)."""

from __future__ import annotations

import functools
import json
import os
import signal
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from specdeploy.api import generate
from tests.triton.helpers import LLMAPI, LONG, MEDUSA, SETS, double_answer, leave, serve_smollm2
from tests.triton.reference_client import answer

QUESTION = "What is 2 + 2?"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, backends: Path) -> Iterator[dict[str, Any]]:  # noqa: ARG001
    """`specdeploy serve` of cpu-smollm2 (one for this module): what it recorded (`openai`, `grpc`, ...)."""
    pytest.importorskip("torch")
    pytest.importorskip("openai")
    server, state, _ = serve_smollm2(tmp_path_factory.mktemp("openai") / "art")
    try:
        yield dict(json.loads(state.read_text()))
    finally:
        os.killpg(server.pid, signal.SIGINT)
        server.communicate(timeout=60)


@pytest.fixture(scope="module")
def base(served: dict[str, Any]) -> str:
    """The served model's OpenAI endpoint's base URL."""
    return str(served["openai"])


def test_openai_client_against_the_served_model(base: str) -> None:
    import openai

    client: Any = openai.OpenAI(base_url=base, api_key="unused")  # untyped: the tests send what users send
    assert [m.id for m in client.models.list()] == ["smollm2"]

    local = generate("cpu-smollm2", QUESTION, SETS, max_tokens=8)
    chat = client.chat.completions.create(
        model="smollm2", messages=[{"role": "user", "content": QUESTION}], max_tokens=8
    )
    assert chat.choices[0].message.content == local.text and chat.choices[0].finish_reason == "length"
    assert chat.usage.completion_tokens == 8 and chat.usage.prompt_tokens > 0

    chunks = list(
        client.chat.completions.create(
            model="smollm2",
            max_tokens=8,
            stream=True,
            stream_options={"include_usage": True},
            messages=[{"role": "user", "content": QUESTION}],
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == local.text and len([c for c in chunks if c.choices]) > 2
    assert chunks[-1].usage.completion_tokens == 8

    completion = client.completions.create(model="smollm2", prompt="The capital of France is", max_tokens=6)
    assert completion.choices[0].text and completion.usage.completion_tokens == 6
    streamed = list(
        client.completions.create(model="smollm2", prompt="The capital of France is", max_tokens=6, stream=True)
    )
    assert "".join(c.choices[0].text for c in streamed) == completion.choices[0].text

    with pytest.raises(openai.BadRequestError) as bad:
        client.chat.completions.create(
            model="smollm2", messages=[{"role": "user", "content": QUESTION}], max_tokens=8, logit_bias={"42": 5}
        )
    body: Any = bad.value.body
    assert body["type"] == "invalid_request_error" and "logit_bias" in body["message"]
    with pytest.raises(openai.BadRequestError, match="temperature must be"):
        client.chat.completions.create(
            model="smollm2", messages=[{"role": "user", "content": QUESTION}], temperature=-1
        )  # the model's own INVALID_ARGUMENT, passed on
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="gpt-4", messages=[{"role": "user", "content": QUESTION}])

    raw = urllib.request.Request(
        f"{base}/chat/completions",
        json.dumps(
            {"model": "smollm2", "max_tokens": 4, "stream": True, "messages": [{"role": "user", "content": QUESTION}]}
        ).encode(),
        {"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(raw, timeout=300) as response:
        events = [line.strip() for line in response if line.startswith(b"data:")]
    assert events[-1] == b"data: [DONE]" and len(events) > 2


@functools.cache
def smollm2() -> Any:
    from specdeploy.engines.reference.runtime import load_pair
    from specdeploy.engines.reference.runtime.models import SMOLLM2_REF

    return load_pair(SMOLLM2_REF)


def greedy(messages: list[dict[str, str]], max_tokens: int) -> tuple[str, int]:
    """The runtime's own greedy answer for the conversation templated by the tokenizer (not by the frontend):
    (text, prompt tokens)."""
    from specdeploy.engines.reference.runtime import generate as decode

    pair = smollm2()
    ids = pair.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    ids = list(ids["input_ids"] if hasattr(ids, "keys") else ids)
    outputs, _ = decode(pair, [ids], "none", 1, 1, max_tokens)
    return pair.tokenizer.decode(outputs[0], skip_special_tokens=True), len(ids)


def test_chat_takes_system_messages_and_conversations(base: str) -> None:
    import openai

    client: Any = openai.OpenAI(base_url=base, api_key="unused")  # untyped: the tests send what users send
    system = {"role": "system", "content": "You are a pirate. Answer every question like a pirate would."}
    turns = [
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": "2 + 2 = 4."},
        {"role": "user", "content": "And what is 3 + 3?"},
    ]

    def ask(messages: list[dict[str, Any]], stream: bool = False) -> tuple[str, int]:
        if stream:
            chunks = list(
                client.chat.completions.create(
                    model="smollm2",
                    max_tokens=12,
                    stream=True,
                    stream_options={"include_usage": True},
                    messages=messages,
                )
            )
            text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
            return text, chunks[-1].usage.prompt_tokens
        answer = client.chat.completions.create(model="smollm2", max_tokens=12, messages=messages)
        return answer.choices[0].message.content or "", answer.usage.prompt_tokens

    plain = ask([turns[0]])
    pirate = ask([system, turns[0]])
    assert pirate == greedy([system, turns[0]], 12) and plain == greedy([turns[0]], 12)
    assert pirate != plain  # the system text replaced SmolLM2's default system prompt
    assert ask([{**system, "role": "developer"}, turns[0]]) == pirate
    assert ask([system, *turns]) == greedy([system, *turns], 12) == ask([system, *turns], stream=True)
    parts = [{"type": "text", "text": "What is 2 + 2?"}]
    assert ask([{"role": "user", "content": parts}]) == plain

    with pytest.raises(openai.BadRequestError) as bad:
        client.chat.completions.create(
            model="smollm2",
            max_tokens=4,
            messages=[turns[0], {"role": "tool", "content": "4", "tool_call_id": "call_1"}],
        )
    body: Any = bad.value.body
    assert bad.value.status_code == 400 and body["param"] == "messages[1].role"
    assert body["type"] == "invalid_request_error" and "'tool' is not supported" in body["message"]


# A chat template in the tiny tokenizer's words (tests/triton/conftest.py WORDS), and a conversation rendered by it
CHAT_TEMPLATE = (
    "{% for m in messages %}{{ {'system': 'speculative', 'user': 'hello', 'assistant': 'world'}"
    "[m['role']] }} {{ m['content'] }} {% endfor %}{% if add_generation_prompt %}fast{% endif %}"
)
CHAT = [
    {"role": "system", "content": "decoding"},
    {"role": "user", "content": "is"},
    {"role": "assistant", "content": "fast"},
    {"role": "user", "content": "decoding is"},
]
RENDERED = "speculative decoding hello is world fast hello decoding is fast"


def test_engine_chat_reaches_the_model_templated(
    write_profile,
    tiny_tokenizer: Path,
    engine_inputs,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    server_factory,
) -> None:
    """The engine layout's text_input is tokenized as it is (preprocessing applies no template): the frontend
    renders the conversation with tokenizer_dir's template; the echoing backend double returns what arrived."""
    import dataclasses

    import openai
    from transformers import AutoTokenizer

    from specdeploy.api import load_and_resolve
    from specdeploy.render.actions import render_resolved
    from specdeploy.serve.local import start_frontend

    tokenizer = AutoTokenizer.from_pretrained(tiny_tokenizer)
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(tmp_path / "chat-tokenizer")
    inputs = dataclasses.replace(engine_inputs, tokenizer_dir=str(tmp_path / "chat-tokenizer"))
    repo = render_resolved(load_and_resolve(str(write_profile(MEDUSA))), tmp_path / "repo", inputs=inputs).out
    server = server_factory(repo)
    for model in ("preprocessing", "tensorrt_llm", "postprocessing", "ensemble"):
        server.load(model)
    server.frontend = start_frontend(server, "ensemble", 0)
    try:
        client: Any = openai.OpenAI(base_url=server.frontend.url, api_key="unused")
        answer = client.chat.completions.create(model="ensemble", max_tokens=8, messages=CHAT)
        assert answer.choices[0].message.content == RENDERED and answer.usage.prompt_tokens == 10
        # no output_ids from the ensemble: the completion is counted with tokenizer_dir's tokenizer (was 0)
        assert answer.usage.completion_tokens == len(tokenizer.encode(RENDERED, add_special_tokens=False)) > 0
    finally:
        server.frontend.stop()


def test_llmapi_chat_reaches_the_llm_templated(
    write_profile,
    tiny_tokenizer: Path,
    backends_with_trtllm_double: Path,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    """The llmapi layout hands text_input to LLM.generate_async as it is: the frontend renders the conversation
    with the checkpoint's tokenizer (model.yaml `model`); the `tensorrt_llm` double answers the words of what
    arrived, reversed (tests/fixtures/fake_trtllm/README.md)."""
    import openai
    from transformers import AutoTokenizer

    from specdeploy.api import load_and_resolve
    from specdeploy.render.actions import render_resolved
    from specdeploy.render.server import start_server
    from specdeploy.serve.local import find_repository, start_frontend

    profile = write_profile(LLMAPI)
    tokenizer = AutoTokenizer.from_pretrained(tiny_tokenizer)
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(tmp_path / "llama")  # the checkpoint folder LLM() gets: its tokenizer lives there
    repo = render_resolved(load_and_resolve(str(profile)), tmp_path / "repo").out
    model = find_repository(repo).models[0]
    server = start_server(
        repo,
        backends_with_trtllm_double,
        tmp_path / "server.log",
        extra_args=("--disable-auto-complete-config",),
        env={"FAKE_TRTLLM_VERSION": "1.2.1"},
    )
    try:
        server.load(model)
        server.frontend = start_frontend(server, model, 0)
        client: Any = openai.OpenAI(base_url=server.frontend.url, api_key="unused")
        reply = client.chat.completions.create(model=model, max_tokens=8, messages=CHAT)
        assert reply.choices[0].message.content == double_answer(RENDERED, 8) and reply.usage.prompt_tokens == 10
        counted = len(tokenizer.encode(double_answer(RENDERED, 8), add_special_tokens=False))
        assert reply.usage.completion_tokens == counted > 0  # text only from the LLM: counted by its tokenizer
    finally:
        if server.frontend is not None:
            server.frontend.stop()
        server.stop()


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "unstreamed"])
def test_a_client_that_leaves_cancels_its_request(served: dict[str, Any], stream: bool) -> None:
    """The endpoint cancels the Triton request of a client that disconnects (a gRPC cancel), so the model stops
    decoding it: a request sent after decodes alone (batch_size 1). Before (HTTP to Triton): an unstreamed request
    decoded on to max_tokens beside it (batch_size 2); a streamed one already stopped, as the endpoint closed its
    /generate_stream connection, which tritonserver 2.51 cancels (docs/serving.md, Cancellation)."""
    if stream:
        leave(
            served["openai"],
            "chat/completions",
            {
                **LONG,
                "stream": True,
                "messages": [{"role": "user", "content": "Tell me a long story about a lighthouse."}],
            },
        )
    else:
        leave(served["openai"], "completions", {**LONG, "prompt": "Once upon a time, in a lighthouse,"})
    time.sleep(1.5)  # more than the model's cancel check interval (0.25 s) and a step
    alone = answer(str(served["grpc"]), "smollm2", {"text_input": QUESTION, "max_tokens": 4})
    assert alone["batch_size"] == 1, "the abandoned request was still decoding beside it"


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (
            json.dumps({"model": "smollm2", "max_tokens": 4, "messages": [{"role": "user", "content": "\ud800"}]}),
            "a lone surrogate: not Unicode text",
        ),
        ("[" * 100_000 + "]" * 100_000, "nested deeper than 64 levels"),
        (
            json.dumps({"model": "smollm2", "max_tokens": [4], "messages": [{"role": "user", "content": QUESTION}]}),
            "max_tokens must be an integer, not [4]",
        ),
        (
            json.dumps(
                {
                    "model": "smollm2",
                    "max_tokens": 4,
                    "stream": "false",
                    "messages": [{"role": "user", "content": QUESTION}],
                }
            ),
            'stream must be true or false, not "false"',
        ),
    ],
    ids=["surrogate", "deep", "max_tokens-list", "stream-string"],
)
def test_hostile_bodies_are_400s_before_the_model(base: str, body: str, said: str) -> None:
    """Issue 30 item 16, against the served model (the chat template renders the messages): a lone surrogate and a
    100k-deep body were 500s, `max_tokens: [4]` a 200, `stream: "false"` streamed."""
    request = urllib.request.Request(f"{base}/chat/completions", body.encode(), {"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=300)
    error = json.loads(refused.value.read())["error"]
    assert refused.value.code == 400 and said in error["message"] and error["type"] == "invalid_request_error"
