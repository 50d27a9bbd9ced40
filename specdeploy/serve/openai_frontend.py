"""An OpenAI-compatible endpoint in front of a served Triton model: what `specdeploy serve` starts beside
tritonserver, so the `openai` client, AIPerf/GenAI-Perf `--endpoint-type chat` and curl scripts written for
trtllm-serve or vllm serve work unchanged.

`/v1/models`, `/v1/chat/completions`, `/v1/completions` (SSE streaming ending in `data: [DONE]`, `usage`,
errors as `{"error": {"message", "type", "param", "code"}}`). Each request becomes one Triton request over a gRPC
stream (triton_grpc.py) with the input names the model's own metadata declares (reference, engine ensemble or
llmapi layout); a client that disconnects, streamed or not, cancels it in Triton (aiohttp's handler cancellation),
so the model stops decoding. An OpenAI parameter the model has no input for is refused (400), never
dropped (null is "not given"); Triton unreachable, breaking off or sending garbage is a 502. Chat takes what
the served model's chat template takes (system/developer, user and assistant messages, string or text-part
content): the frontend renders the whole conversation with the model's own tokenizer and
sends the text raw (openai_chat.py; where it cannot, one user message, as the model takes it); `usage`
counts the templated prompt. Completions send the raw prompt where the model can skip the template
(`chat_template`). An llmapi deployment on a GPU machine has trtllm-serve's own endpoint as the equivalent.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

# OpenAI parameter -> the Triton input names that carry it, first declared wins (reference/ensemble, llmapi)
CANDIDATES = {
    "max_tokens": ("max_tokens", "sampling_param_max_tokens"),
    "temperature": ("temperature", "sampling_param_temperature"),
    "top_p": ("top_p", "sampling_param_top_p"),
    "stop": ("stop_words", "sampling_param_stop"),
    "seed": ("seed", "random_seed", "sampling_param_seed"),
    "min_tokens": ("min_tokens", "min_length"),  # vLLM's and trtllm-serve's extension
}
STREAM = ("stream", "streaming")
EXCLUDE = ("exclude_input_in_output", "sampling_param_exclude_input_from_output")
NEUTRAL = {"n": 1, "frequency_penalty": 0, "presence_penalty": 0, "logprobs": False, "echo": False}
IGNORED = ("model", "user", "stream_options", "messages", "prompt", "stream", "max_completion_tokens", "ignore_eos")


class ApiError(Exception):
    def __init__(self, status: int, message: str, param: str | None = None, kind: str = "invalid_request_error"):
        super().__init__(message)
        self.status, self.message, self.param, self.kind = status, message, param, kind

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.kind, "param": self.param, "code": None}}


@dataclass(frozen=True)
class TokenizerRef:
    """Where a tokenizer loads from: a folder or hub id, and the revision a hub id is pinned to."""

    source: str
    revision: str | None = None

    def __str__(self) -> str:
        return f"{self.source}@{self.revision}" if self.revision else self.source


@dataclass(frozen=True)
class Input:
    """A model input as its metadata declares it: Triton datatype and shape (-1: variable; the batch dimension
    included where the model batches)."""

    datatype: str
    shape: tuple[int, ...]


@dataclass(frozen=True)
class Served:
    """The Triton model behind the endpoint: its gRPC address, name, inputs (by name), the repository's layout and
    where its tokenizer lives (openai_chat.tokenizer_of; None: not found)."""

    grpc: str
    model: str
    inputs: Mapping[str, Input]
    decoupled: bool
    layout: str = "unknown"
    tokenizer: TokenizerRef | None = None


def triton_body(served: Served, body: dict[str, Any], prompt: str, raw: bool) -> tuple[dict[str, Any], bool]:
    """The generate request for an OpenAI body (`raw`: the prompt skips the model's chat template), and whether to
    stream; unsupported parameters raise."""
    _refuse_unsupported(served, body)
    out: dict[str, Any] = {"text_input": prompt}
    if "max_completion_tokens" in body and body["max_completion_tokens"] is not None:
        body = {**body, "max_tokens": body["max_completion_tokens"]}
    if body.get("ignore_eos"):  # vLLM's extension (AIPerf's fixed output lengths): EOS held back to max_tokens
        if body.get("max_tokens") is None:
            raise ApiError(400, "ignore_eos needs max_tokens", "ignore_eos")
        body = {**body, "min_tokens": body["max_tokens"]}
    for name, names in CANDIDATES.items():
        value = body.get(name)
        if value is None:
            continue
        target = next((n for n in names if n in served.inputs), None)
        if target is None:
            raise ApiError(400, f"{name} is not supported by model {served.model}", name)
        out[target] = ([value] if isinstance(value, str) else value) if name == "stop" else value
    exclude = next((n for n in EXCLUDE if n in served.inputs), None)
    if exclude:
        out[exclude] = True
    if raw and "chat_template" in served.inputs:
        out["chat_template"] = False
    stream = bool(body.get("stream"))
    flag = next((n for n in STREAM if n in served.inputs), None)
    if stream and flag:
        out[flag] = True
    return out, stream


def _refuse_unsupported(served: Served, body: dict[str, Any]) -> None:
    given = {k: v for k, v in body.items() if v is not None}  # null is "not given", as OpenAI's own clients mean it
    unknown = sorted(set(given) - set(CANDIDATES) - set(NEUTRAL) - set(IGNORED))
    if unknown:
        raise ApiError(400, f"{', '.join(unknown)} not supported by this endpoint", unknown[0])
    for name, neutral in NEUTRAL.items():  # `logprobs: 0` asks for logprobs and `n: true` is no count: not neutral
        value = given.get(name, neutral)
        if value != neutral or isinstance(value, bool) != isinstance(neutral, bool):
            raise ApiError(400, f"{name} must be {neutral!r} for model {served.model}", name)
    _check_stream_options(body)
    if body.get("stream") and not served.decoupled:  # one response per request: the model refuses `stream`
        raise ApiError(400, f"stream is not supported by model {served.model}: it is not decoupled (one response "
                            "per request); serve a profile with serving.streaming: true to stream", "stream")


def _check_stream_options(body: dict[str, Any]) -> None:
    """An object whose only key is include_usage (a bool), and only with `stream`: vLLM and trtllm-serve refuse
    stream_options without stream (their validate_stream_options)."""
    options = body.get("stream_options")
    if options is None:
        return
    if not isinstance(options, dict):
        raise ApiError(400, "stream_options must be an object", "stream_options")
    if options and not body.get("stream"):
        raise ApiError(400, "stream_options can only be given with stream: true", "stream_options")
    for key, value in options.items():
        if key != "include_usage" and value is not None:
            raise ApiError(400, f"stream_options.{key} is not supported (only include_usage)", "stream_options")
        if key == "include_usage" and not isinstance(value, (bool, type(None))):
            raise ApiError(400, "stream_options.include_usage must be true or false", "stream_options")


def prompt_of(body: dict[str, Any]) -> str:
    """A completion's prompt (openai_chat.chat_prompt has the chat one)."""
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1:
        prompt = prompt[0]
    if not isinstance(prompt, str) or not prompt:
        raise ApiError(400, "prompt must be one non-empty string", "prompt")
    return prompt


def usage(events: list[dict[str, Any]], counted: int | None = None,
          count: Callable[[str], int] | None = None) -> dict[str, int]:
    """Token counts from the model's own outputs, else the prompt tokens `counted` by the frontend (else 0), and
    the completion's text counted by `count` (the served tokenizer) where the model returns no token ids."""
    completion = sum(len(e["output_ids"]) if isinstance(e.get("output_ids"), list) else 1 if "output_ids" in e
                     else 0 for e in events)
    if count is not None and not any("output_ids" in e for e in events):
        completion = count("".join(str(e.get("text_output", "")) for e in events))
    prompt = next((int(e["num_input_tokens"]) for e in events if "num_input_tokens" in e), counted or 0)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def choice(chat: bool, text: str, finish: str | None, delta: bool) -> dict[str, Any]:
    if not chat:
        return {"index": 0, "text": text, "finish_reason": finish, "logprobs": None}
    message = {"role": "assistant", "content": text}
    return {"index": 0, ("delta" if delta else "message"): message, "finish_reason": finish, "logprobs": None}


def finish_of(event: dict[str, Any]) -> str:
    reason = event.get("finish_reason")
    return reason if reason in ("stop", "length") else "stop"


def envelope(chat: bool, model: str, rid: str, created: int, chunk: bool) -> dict[str, Any]:
    kind = ("chat.completion.chunk" if chunk else "chat.completion") if chat else "text_completion"
    return {"id": rid, "object": kind, "created": created, "model": model}


def new_id(chat: bool) -> str:
    return f"{'chatcmpl' if chat else 'cmpl'}-{uuid.uuid4().hex}"


def now() -> int:
    return int(time.time())


class Frontend:
    """The endpoint running in a thread of its own (its own event loop), stopped with `stop()`."""

    def __init__(self, served: Served, host: str, port: int) -> None:
        self.served, self.host, self.port = served, host, port
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="specdeploy-openai", daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def start(self, timeout: float = 30.0) -> Frontend:
        self.thread.start()
        self.ready.wait(timeout)
        if self.error is not None:
            raise self.error
        return self

    def stop(self) -> None:
        if self.thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=10)

    def _run(self) -> None:
        from aiohttp import web

        from specdeploy.serve.openai_routes import routes

        asyncio.set_event_loop(self.loop)
        runner = web.AppRunner(routes(self.served), handler_cancellation=True)  # a client that leaves cancels
        try:
            self.loop.run_until_complete(runner.setup())
            site = web.TCPSite(runner, self.host, self.port)
            self.loop.run_until_complete(site.start())
            self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]  # port 0: the one bound
        except BaseException as exc:  # noqa: BLE001 - handed to start()
            self.error = exc
            self.ready.set()
            return
        self.ready.set()
        try:
            self.loop.run_forever()
        finally:
            self.loop.run_until_complete(runner.cleanup())
            self.loop.close()
