"""Chat requests rendered with the served model's own chat template in the OpenAI frontend, as trtllm-serve and
vllm serve do: the whole `messages` list goes through the tokenizer's `apply_chat_template(...,
add_generation_prompt=True)` and the text is sent as the model's raw prompt.

Where the tokenizer lives is the layout's to say (`TritonLayout.tokenizer`: reference, the model's `target_ref`
parameter; engine, the preprocessing model's `tokenizer_dir` parameter; llmapi, model.yaml's `tokenizer` or
`model`), read through the engine's `tokenizer_folder` (a shipped model's folder). It is loaded once, in the
background from the endpoint's start (the first chat request waits for it; never at import: `--help`, `validate`,
`plan` stay light). Where the text cannot reach the model untemplated (a model whose layout is not
`templated_chat`, such as reference, without the `chat_template` input) or no tokenizer with a chat template is
found, chat takes one user message (the model templates it, or takes it as it is) and refuses
anything else with a 400 saying why.

Roles: system, user, assistant; `developer` is taken as system, as OpenAI does for models without developer
messages (community.openai.com/t/1062784, OpenAI staff) and llama.cpp does (ggml-org/llama.cpp PR #20215); vLLM's
chat completions hand it to the template verbatim (vllm/entrypoints/chat_utils.py
@ 001eadcf295d90aa0664963cd6a9d93f38a2f3da), only its Responses API maps it (vllm-project/vllm PR #43590).
tool/function messages and tool calls are refused: this endpoint has no tools. Text parts are joined with "\n"
(vLLM, same file).

The models encode the text with special tokens added (reference: `tokenizer.encode`; engine: preprocessing
`add_special_tokens` true; llmapi: `generate_async`), while trtllm-serve adds none to a templated chat prompt
(ChatCompletionRequest.add_special_tokens defaults to false: tensorrt_llm/serve/openai_protocol.py @ 0076e93):
a BOS the template wrote is dropped from the text when the tokenizer adds one itself, so the ids are the same.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from specdeploy.plugin.registry import engine_for_layout, layout_named
from specdeploy.serve.openai_frontend import ApiError, Served, TokenizerRef

ROLES = ("system", "user", "assistant")
ALIASES = {"developer": "system"}
MESSAGE_KEYS = ("role", "content", "name")


def conversation(messages: Any) -> list[dict[str, str]]:
    """The OpenAI `messages` as the template's `[{role, content[, name]}]`; anything else is a 400."""
    if not isinstance(messages, list) or not messages:
        raise ApiError(400, "messages must be a non-empty list", "messages")
    out = []
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, dict):
            raise ApiError(400, f"{where} must be an object with a role and a content", where)
        role = message.get("role")
        if not isinstance(role, str) or (role not in ROLES and role not in ALIASES):
            raise ApiError(
                400,
                f"{where}.role {role!r} is not supported: this endpoint takes system (or "
                "developer), user and assistant messages, no tools",
                f"{where}.role",
            )
        extra = sorted(k for k, v in message.items() if k not in MESSAGE_KEYS and v is not None)
        if extra:
            key = f"{where}.{extra[0]}"
            raise ApiError(400, f"{key} is not supported: this endpoint has no tools", key)
        entry: dict[str, str] = {"role": ALIASES.get(role, role), "content": _text(message.get("content"), where)}
        name = message.get("name")
        if name is not None and not isinstance(name, str):  # not dropped: the template may show it
            raise ApiError(400, f"{where}.name must be a string", f"{where}.name")
        if name is not None:
            entry["name"] = name
        out.append(entry)
    return out


def _text(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise ApiError(400, f"{where}.content must be a string or a list of text parts", f"{where}.content")
    texts = []
    for j, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind != "text" or not isinstance(part.get("text"), str):
            raise ApiError(
                400,
                f"{where}.content[{j}] is not a text part ({kind!r}): this model takes text only",
                f"{where}.content[{j}]",
            )
        texts.append(part["text"])
    return "\n".join(texts)


def render(tokenizer: Any, conv: list[dict[str, str]]) -> tuple[str, int]:
    """The conversation as the model's prompt text, and its token count as the model will encode it."""
    try:
        text = tokenizer.apply_chat_template(conv, add_generation_prompt=True, tokenize=False)
    except Exception as exc:  # noqa: BLE001 - the template's raise_exception (roles, order) or its own failure
        raise ApiError(400, f"the model's chat template refused the conversation: {exc}", "messages") from None
    bos = tokenizer.bos_token
    if bos and text.startswith(bos) and _adds_bos(tokenizer):
        text = text[len(bos) :]
    return text, len(tokenizer.encode(text))


def _adds_bos(tokenizer: Any) -> bool:
    bos = tokenizer.bos_token_id
    return tokenizer.encode("a")[:1] == [bos] and tokenizer.encode("a", add_special_tokens=False)[:1] != [bos]


class Templater:
    """The served model's tokenizer, loaded once, off the event loop (~5 s on a busy 2-core machine, mostly the
    transformers import): `start` begins it when the endpoint starts, `get` waits for it."""

    def __init__(self, served: Served) -> None:
        self.served = served
        self.lock = threading.Lock()
        self.loaded: tuple[Any, str] | None = None  # (tokenizer or None, why not)

    def start(self) -> None:
        asyncio.get_running_loop().run_in_executor(None, self._load)

    async def get(self) -> tuple[Any, str]:
        if self.loaded is None:
            await asyncio.get_running_loop().run_in_executor(None, self._load)
        assert self.loaded is not None
        return self.loaded

    def _load(self) -> None:
        with self.lock:
            if self.loaded is None:
                self.loaded = self._tokenizer()

    def _tokenizer(self) -> tuple[Any, str]:
        served = self.served
        layout = layout_named(served.layout)
        if not (layout is not None and layout.templated_chat) and "chat_template" not in served.inputs:
            return None, f"model {served.model} applies its own single-turn chat template and takes no templated text"
        if not served.tokenizer:
            return None, f"no tokenizer was found for model {served.model} (layout {served.layout})"
        try:
            from transformers import AutoTokenizer

            source, revision = served.tokenizer.source, served.tokenizer.revision
            engine = engine_for_layout(served.layout)
            source = engine.tokenizer_folder(source) if engine is not None else source
            tokenizer = AutoTokenizer.from_pretrained(source, revision=revision)
        except Exception as exc:  # noqa: BLE001 - any failure leaves chat single-turn, with the reason
            return None, f"the tokenizer of model {served.model} ({served.tokenizer}) could not be loaded: {exc}"
        if getattr(tokenizer, "chat_template", None) is None:
            return None, f"the tokenizer of model {served.model} has no chat template"
        return tokenizer, ""


async def chat_prompt(templater: Templater, body: dict[str, Any]) -> tuple[str, bool, int | None]:
    """(text_input, sent raw, prompt tokens counted here or None) for a chat body."""
    conv = conversation(body.get("messages"))
    tokenizer, why = await templater.get()
    if tokenizer is not None:
        text, count = render(tokenizer, conv)
        return text, True, count
    if [m["role"] for m in conv] != ["user"]:
        raise ApiError(400, f"this endpoint takes one user message for this model: {why}", "messages")
    if not conv[0]["content"]:
        raise ApiError(400, "the user message has no text content", "messages")
    return conv[0]["content"], False, None


def tokenizer_of(
    root: Path, layout: str, model: str, config_of: Callable[[str], dict[str, Any]]
) -> TokenizerRef | None:
    """Where the served model's tokenizer lives, as its layout says (`TritonLayout.tokenizer`; None: not found);
    `config_of(model)` is its Triton config."""
    found = layout_named(layout)
    try:
        value, revision = (found.tokenizer(root, model, config_of) if found is not None else None) or (None, None)
    except Exception:  # noqa: BLE001 - an unreadable config leaves chat single-turn
        return None
    if not (isinstance(value, str) and value and "${" not in value):
        return None
    return TokenizerRef(value, revision if isinstance(revision, str) and revision else None)
