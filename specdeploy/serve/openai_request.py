"""The OpenAI request as a Triton request: each OpenAI parameter on the input the served model declares for it
(reference/engine ensemble or llmapi names), a parameter it has no input for refused (400), never dropped (null is
"not given"); neutral values of the parameters this endpoint does not implement pass, others are refused."""

from __future__ import annotations

import json
from typing import Any

from specdeploy.serve.openai_frontend import ApiError, Served

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
KINDS = {
    "max_tokens": int,
    "max_completion_tokens": int,
    "min_tokens": int,
    "seed": int,
    "temperature": float,
    "top_p": float,
    "stream": bool,
    "ignore_eos": bool,
}
"""The JSON type each parameter takes (a float slot takes an integer too): Triton would take `[4]` as a tensor."""


def triton_body(served: Served, body: dict[str, Any], prompt: str, raw: bool) -> tuple[dict[str, Any], bool]:
    """The Triton inputs for an OpenAI body (`raw`: the prompt skips the model's chat template), and whether to
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
    _check_types(given)
    unknown = sorted(set(given) - set(CANDIDATES) - set(NEUTRAL) - set(IGNORED))
    if unknown:
        raise ApiError(400, f"{', '.join(unknown)} not supported by this endpoint", unknown[0])
    for name, neutral in NEUTRAL.items():  # `logprobs: 0` asks for logprobs and `n: true` is no count: not neutral
        value = given.get(name, neutral)
        if value != neutral or isinstance(value, bool) != isinstance(neutral, bool):
            raise ApiError(400, f"{name} must be {neutral!r} for model {served.model}", name)
    _check_stream_options(body)
    if body.get("stream") and not served.decoupled:  # one response per request: the model refuses `stream`
        raise ApiError(
            400,
            f"stream is not supported by model {served.model}: it is not decoupled (one response "
            "per request); serve a profile with serving.streaming: true to stream",
            "stream",
        )


def _check_types(given: dict[str, Any]) -> None:
    """Each parameter of its JSON type: a boolean is no number (`max_tokens: true`) and `"false"` no boolean."""
    names = {int: "an integer", float: "a number", bool: "true or false"}
    for name, kind in KINDS.items():
        value = given.get(name)
        wanted = (int, float) if kind is float else kind
        if value is not None and (not isinstance(value, wanted) or isinstance(value, bool) != (kind is bool)):
            raise ApiError(400, f"{name} must be {names[kind]}, not {json.dumps(value)[:40]}", name)
    stop = given.get("stop")
    if stop is not None and not (
        isinstance(stop, str) or isinstance(stop, list) and all(isinstance(s, str) for s in stop)
    ):
        raise ApiError(400, "stop must be a string or a list of strings", "stop")


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
