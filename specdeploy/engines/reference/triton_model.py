"""The reference layout's model logic (the reference engine's own), apart from Triton's python backend
(templates/triton/reference model.py hands each request's inputs here and sends what comes back through the
request's response sender).

Requests decode together in one background loop (`specdeploy.engines.reference.runtime.serving`), at most
`max_batch_size` at once; the draft length follows the tuned schedule at the live batch size unless a request
sets its own.
With `stream` a response goes out after every verification step (the tokens it accepted); otherwise one
response carries the whole answer. Either way the last one is marked final. `stream` needs a decoupled model
(serving.streaming true); without it each request gets exactly one response, which Triton's default mode
requires (and which unary gRPC, /infer and /generate need).
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from specdeploy.serve.llm_inputs import BadRequest, LlmRequest, parse

MAX_BYTES_PER_TOKEN = 16  # a cheap bound checked before tokenizing; the token count is checked after
CANCEL_CHECK_S = 0.25  # how often a request asks Triton whether it was cancelled (each ask is a round trip)
Send = Callable[[dict[str, Any], bool], None]  # (outputs, final)


class RequestCancelled(Exception):
    """The client cancelled the request (a gRPC cancel, or a /generate_stream connection closed;
    docs/serving.md, Cancellation): answered CANCELLED."""

    cancelled = True


class ReferenceModel:
    """Built once per model instance from its config.pbtxt parameters."""

    def __init__(self, params: dict[str, str], *, decoupled: bool) -> None:
        from specdeploy.engines.reference.runtime import MAX_DRAFT_LEN, load_pair
        from specdeploy.engines.reference.runtime.serving import InflightLoop

        self.pair = load_pair(params["target_ref"], params.get("drafter_ref") or None, params.get("device") or "cpu")
        self.mechanism = params.get("mechanism") or "none"
        self.decoupled = decoupled  # False: one response per request (Triton's default mode), no `stream`
        self.max_draft_len = MAX_DRAFT_LEN
        self.default_max_tokens = int(params.get("default_max_tokens") or 64)
        self.max_seq_len = int(params.get("max_seq_len") or 0)
        self.k_at = schedule(params)
        self.loop = InflightLoop(
            self.pair, self.mechanism, self.k_at, int(params.get("max_batch_size") or 1), MAX_DRAFT_LEN
        )

    def close(self) -> None:
        self.loop.close()

    def submit(
        self,
        inputs: dict[str, Any],
        send: Send,
        fail: Callable[[BaseException], None],
        cancelled: Callable[[], bool] = lambda: False,
    ) -> None:
        """Validate and queue one request; `send` is called from the decode loop (BadRequest raised here); a
        request whose client `cancelled` it leaves the batch with a RequestCancelled `fail`."""
        import torch

        from specdeploy.engines.reference.runtime.engine import RowSpec
        from specdeploy.engines.reference.runtime.serving import Request
        from specdeploy.prompts import PromptRecord, encode_prompt

        r = parse(inputs, self.default_max_tokens)
        if self.max_seq_len and len(r.prompt) > self.max_seq_len * MAX_BYTES_PER_TOKEN:
            raise BadRequest(
                f"the prompt has {len(r.prompt)} bytes: more than max_seq_len {self.max_seq_len} tokens "
                f"can hold (at most {self.max_seq_len * MAX_BYTES_PER_TOKEN} bytes)"
            )
        prompt = r.prompt.decode("utf-8")  # UnicodeDecodeError is a ValueError: INVALID_ARGUMENT
        if not prompt:
            raise BadRequest("the prompt is empty")
        self._check_request(r)
        ids = encode_prompt(self.pair.tokenizer, PromptRecord("request", "user", (prompt,), raw=not r.chat))
        limit = min(self.max_seq_len or self.pair.max_context, self.pair.max_context - self.max_draft_len)
        if len(ids) + r.max_tokens > limit:
            raise BadRequest(
                f"the prompt has {len(ids)} tokens: with max_tokens {r.max_tokens} that exceeds max_seq_len {limit}"
            )
        seed = r.seed if r.seed is not None else int.from_bytes(os.urandom(7), "little")
        spec = RowSpec(r.max_tokens, r.temperature, torch.Generator().manual_seed(seed), r.top_k, r.top_p, r.min_tokens)
        answer = Answer(self.pair.tokenizer, r, prompt, len(ids), send, lambda: _cancelled(cancelled, fail))
        self.loop.submit(Request(ids, spec, answer.emit, fail, r.draft_len))

    def _check_request(self, r: LlmRequest) -> None:
        if r.stream and not self.decoupled:
            raise BadRequest(
                "stream needs a decoupled model, and this one answers each request with one response: "
                "render it with serving.streaming: true (or send the request without stream)"
            )
        if r.draft_len is not None:
            if not 0 <= r.draft_len <= self.max_draft_len:
                raise BadRequest(f"draft_len must be between 0 and {self.max_draft_len}, got {r.draft_len}")
            if r.draft_len > 0 and self.mechanism == "none":
                raise BadRequest("this model serves no drafter (mechanism none): only draft_len 0 is possible")
        if r.end_id is not None and r.end_id not in self.pair.eos_token_ids:
            raise BadRequest(
                f"end_id {r.end_id} is not this model's end token "
                f"({', '.join(map(str, sorted(self.pair.eos_token_ids)))}): only its own is supported"
            )


class Answer:
    """One request's responses: text decoded incrementally, stop strings cut, per-step or whole."""

    def __init__(
        self,
        tokenizer: Any,
        r: LlmRequest,
        prompt: str,
        prompt_tokens: int,
        send: Send,
        cancelled: Callable[[], bool] = lambda: False,
    ) -> None:
        self.tokenizer, self.r, self.send, self.prompt_tokens = tokenizer, r, send, prompt_tokens
        self.cancelled, self.checked = cancelled, time.perf_counter()
        self.tokens: list[int] = []
        self.text = ""  # decoded so far, cut at a stop string
        self.sent_text = 0
        self.sent_ids = 0
        self.ks: Counter[int] = Counter()
        self.batch = 0
        self.head = "" if r.exclude_input else prompt
        self.start = time.perf_counter()
        self.reason = "length"
        self.hold = max((len(s) for s in r.stop), default=1) - 1

    def emit(self, step: Any) -> bool:
        """Called by the decode loop after each step; True asks it to stop this request (a stop string, or the
        client cancelled it: then it was answered CANCELLED)."""
        if not step.finished and time.perf_counter() - self.checked > CANCEL_CHECK_S:
            self.checked = time.perf_counter()
            if self.cancelled():
                return True
        self.tokens += step.tokens
        self.batch = max(self.batch, step.batch)
        if step.tokens:
            self.ks[step.k] += 1
        text = self.tokenizer.decode(self.tokens, skip_special_tokens=True)
        stopped = False
        cut = min((i for i in (text.find(s) for s in self.r.stop) if i >= 0), default=-1)
        if cut >= 0:
            text, stopped, self.reason = text[:cut], True, "stop"
        elif step.finished:
            self.reason = "length" if len(self.tokens) >= self.r.max_tokens else "stop"  # else EOS
        self.text = text
        final = step.finished or stopped
        if self.r.stream:
            ready = len(text) if final else len(text) - self.hold
            while ready > self.sent_text and text[ready - 1] == "\ufffd":  # an incomplete UTF-8 sequence
                ready -= 1
            if ready > self.sent_text or final:
                self.send(self._outputs(text[self.sent_text : ready], step, final), final)
                self.sent_text = max(self.sent_text, ready)
        elif final:
            self.send(self._outputs(text, step, True), True)
        return stopped

    def _outputs(self, text: str, step: Any, final: bool) -> dict[str, Any]:
        ids = self.tokens[self.sent_ids :] if self.r.stream else self.tokens
        self.sent_ids = len(self.tokens)
        first = self.head if (not self.r.stream or self.sent_text == 0) else ""
        k = step.k if self.r.stream else (self.ks.most_common(1)[0][0] if self.ks else step.k)
        elapsed = time.perf_counter() - self.start
        return {
            "text_output": (first + text).encode("utf-8"),
            "output_ids": ids,
            "tokens_per_s": len(self.tokens) / elapsed if elapsed > 0 else 0.0,
            "acceptance_rate": step.accepted / step.drafted if step.drafted else 0.0,
            "draft_len": k,
            "batch_size": self.batch,
            "finish_reason": (self.reason if final else "").encode("utf-8"),
            "num_input_tokens": self.prompt_tokens,
        }


def _cancelled(cancelled: Callable[[], bool], fail: Callable[[BaseException], None]) -> bool:
    if not cancelled():
        return False
    fail(RequestCancelled("the request was cancelled"))
    return True


def schedule(params: dict[str, str]) -> Callable[[int], int]:
    """The draft length at a live batch size: the tuned lower-bound schedule (speculation off above
    max_concurrency), else the fixed `draft_len` parameter (0: off)."""
    from specdeploy.schedule import canonical, draft_len_at

    fixed = int(params.get("draft_len") or 0)
    raw = params.get("schedule") or ""
    if not raw:
        return lambda _batch: fixed
    ranges = canonical(
        {int(k): int(v) for k, v in json.loads(raw).items()},
        max_concurrency=int(params.get("max_concurrency") or 0) or None,
        max_batch_size=int(params.get("max_batch_size") or 1),
    )
    return lambda batch: draft_len_at(ranges, batch)
