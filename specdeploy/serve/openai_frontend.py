"""An OpenAI-compatible endpoint in front of a served Triton model: what `specdeploy serve` starts beside
tritonserver, so the `openai` client, AIPerf/GenAI-Perf `--endpoint-type chat` and curl scripts written for
trtllm-serve or vllm serve work unchanged.

`/v1/models`, `/v1/chat/completions`, `/v1/completions` (SSE streaming ending in `data: [DONE]`, `usage`, errors as
`{"error": {"message", "type", "param", "code"}}`). Each request becomes one Triton request over gRPC
(triton_grpc.py: a unary ModelInfer for a model that is not decoupled, a ModelStreamInfer call for a decoupled one)
with the input names the model's own metadata declares (reference, engine ensemble or llmapi layout); a client that
disconnects, streamed or not, cancels it in Triton (aiohttp's handler cancellation; what each layout does with it:
docs/serving.md, "Cancellation"). An OpenAI parameter the model has no input for is refused
(400), never dropped (null is "not given": openai_request.py). Triton unreachable, breaking off or sending garbage
is a 502; Triton's own error is a 400 for INVALID_ARGUMENT and a 502 for any other status where its status reaches
the endpoint (unary); a decoupled model's stream carries the message only, so there an early error is a 502 when the
model is not ready and a 400 otherwise (triton_grpc.py says which). Chat takes what the served model's chat template
takes (system/developer, user and assistant messages, string or text-part content): the frontend renders the whole
conversation with the model's own tokenizer and sends the text raw (openai_chat.py; where it cannot, one user
message, as the model takes it); `usage` counts the templated prompt. Completions send the raw prompt where the
model can skip the template (`chat_template`). An llmapi deployment on a GPU machine has trtllm-serve's own endpoint
as the equivalent."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


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


def usage(
    events: list[dict[str, Any]], counted: int | None = None, count: Callable[[str], int] | None = None
) -> dict[str, int]:
    """Token counts from the model's own outputs, else the prompt tokens `counted` by the frontend (else 0), and
    the completion's text counted by `count` (the served tokenizer) where the model returns no token ids."""
    completion = sum(
        len(e["output_ids"]) if isinstance(e.get("output_ids"), list) else 1 if "output_ids" in e else 0 for e in events
    )
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
