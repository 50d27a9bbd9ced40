"""The standard LLM request inputs of Triton's TensorRT-LLM and vLLM models, read for the reference model.

Each input is honoured or refused (`BadRequest`, answered INVALID_ARGUMENT), never silently dropped. Where the
names and types were read:
- TensorRT-LLM ensemble / BLS: triton-inference-server/tensorrtllm_backend
  all_models/inflight_batcher_llm/{ensemble,tensorrt_llm_bls}/config.pbtxt at c2e65b8 (2025-05-13):
  text_input STRING, max_tokens INT32, stream BOOL, exclude_input_in_output BOOL, min_tokens INT32,
  temperature FP32, top_p FP32, top_k INT32, seed UINT64, end_id INT32, stop_words / bad_words STRING [-1].
- vLLM: triton-inference-server/vllm_backend src/model.py at 8de0c14 (auto-completed inputs): text_input,
  stream, exclude_input_in_output BOOL, sampling_parameters STRING (JSON of vLLM SamplingParams fields).
- specdeploy's own: `draft_len` (the request's K), `chat_template` BOOL (false: the prompt is sent raw, as
  OpenAI completions do; default true: the model's chat template wraps it as one user turn).
- `min_length` INT32 and `random_seed` UINT64: the same ensemble before c2e65b8 renamed them (at b5fa472,
  2025-04-29, back to 039e5b4); GenAI-Perf 0.0.16 `--backend tensorrtllm` still sends `min_length` (seen in its
  inputs.json with --output-tokens-mean-deterministic): aliases of min_tokens and seed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

ALIASES = {"min_length": "min_tokens", "random_seed": "seed", "stop_words": "stop"}
SCALARS = (
    "max_tokens",
    "draft_len",
    "stream",
    "exclude_input_in_output",
    "min_tokens",
    "min_length",
    "temperature",
    "top_p",
    "top_k",
    "seed",
    "random_seed",
    "end_id",
    "chat_template",
)
# vLLM SamplingParams fields honoured from `sampling_parameters`; any other key is refused by name
SAMPLING_KEYS = ("max_tokens", "min_tokens", "temperature", "top_p", "top_k", "seed", "stop", "ignore_eos", "n")


class BadRequest(ValueError):
    """The request, not the model, is wrong: INVALID_ARGUMENT."""


@dataclass(frozen=True)
class LlmRequest:
    prompt: bytes
    max_tokens: int
    draft_len: int | None = None  # the request's own K (None: the schedule's)
    stream: bool = False
    exclude_input: bool = True  # absent: only the generated text, as this model always answered
    min_tokens: int = 0
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    seed: int | None = None
    end_id: int | None = None
    stop: tuple[str, ...] = ()
    chat: bool = True


def parse(inputs: Mapping[str, Any], default_max_tokens: int) -> LlmRequest:
    """`inputs`: input name -> numpy array, as the request carried them."""
    text = inputs.get("text_input")
    if text is None:
        raise BadRequest("the request has no 'text_input' (the prompt, TYPE_STRING)")
    prompt = _first(text, "text_input")
    prompt = prompt if isinstance(prompt, bytes) else str(prompt).encode("utf-8")
    given: dict[str, Any] = {}
    for name in SCALARS:
        if name in inputs:
            _put(given, ALIASES.get(name, name), _first(inputs[name], name), name)
    stop = [_text(v) for v in inputs["stop_words"].reshape(-1)] if "stop_words" in inputs else []
    bad = [_text(v) for v in inputs["bad_words"].reshape(-1)] if "bad_words" in inputs else []
    if any(bad):
        raise BadRequest(
            "bad_words is not supported by this model (the reference runtime bans no words); "
            "send the request without it"
        )
    if "sampling_parameters" in inputs:
        stop += _sampling(given, _first(inputs["sampling_parameters"], "sampling_parameters"))
    request = LlmRequest(prompt, int(given.pop("max_tokens", default_max_tokens)), stop=tuple(s for s in stop if s))
    return _check(replace(request, **_typed(given)))


def _typed(given: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in given.items():
        if name in ("stream", "exclude_input_in_output", "chat_template"):
            out[{"stream": "stream", "chat_template": "chat"}.get(name, "exclude_input")] = _bool(value, name)
        elif name in ("temperature", "top_p"):
            out[name] = _number(value, name, float)
        else:
            out[name] = _number(value, name, int)
    return out


def _check(r: LlmRequest) -> LlmRequest:
    if r.max_tokens < 1:
        raise BadRequest(f"max_tokens must be at least 1, got {r.max_tokens}")
    if not 0 <= r.min_tokens <= r.max_tokens:
        raise BadRequest(f"min_tokens must be between 0 and max_tokens ({r.max_tokens}), got {r.min_tokens}")
    if not (math.isfinite(r.temperature) and r.temperature >= 0):
        raise BadRequest(f"temperature must be a finite number >= 0, got {r.temperature}")
    if not 0 < r.top_p <= 1:
        raise BadRequest(f"top_p must be in (0, 1], got {r.top_p}")
    if r.top_k < 0:
        raise BadRequest(f"top_k must be >= 0 (0: every token), got {r.top_k}")
    if r.seed is not None and not 0 <= r.seed < 2**63:
        raise BadRequest(f"seed must be between 0 and 2**63 - 1, got {r.seed}")
    return r


def _sampling(given: dict[str, Any], raw: Any) -> list[str]:
    """vLLM's `sampling_parameters` JSON: its known fields merged into `given`; returns its stop strings."""
    from specdeploy.boundedio import InputError, loads_json

    try:
        params = loads_json(raw if isinstance(raw, bytes) else str(raw))
    except InputError as exc:  # not JSON, nested too deep, not Unicode text
        raise BadRequest(f"sampling_parameters is not valid: {exc.detail}") from None
    if not isinstance(params, dict):
        raise BadRequest("sampling_parameters must be a JSON object")
    unknown = sorted(set(params) - set(SAMPLING_KEYS))
    if unknown:
        raise BadRequest(
            f"sampling_parameters {', '.join(unknown)} not supported by this model "
            f"(supported: {', '.join(SAMPLING_KEYS)})"
        )
    if "n" in params and _number(params.pop("n"), "n", int) != 1:
        raise BadRequest("sampling_parameters n must be 1: this model answers one sequence per request")
    stop = params.pop("stop", [])
    stop = [stop] if isinstance(stop, str) else stop
    if not isinstance(stop, list) or not all(isinstance(s, str) for s in stop):
        raise BadRequest("sampling_parameters stop must be a string or a list of strings")
    if _bool(params.pop("ignore_eos", False), "ignore_eos"):
        params["min_tokens"] = params.get("max_tokens", given.get("max_tokens"))
        if params["min_tokens"] is None:
            raise BadRequest("sampling_parameters ignore_eos needs max_tokens")
    for name, value in params.items():
        _put(
            given,
            "top_k" if name == "top_k" else name,
            0 if name == "top_k" and value in (-1, "-1") else value,
            f"sampling_parameters {name}",
        )
    return stop


def _put(given: dict[str, Any], name: str, value: Any, source: str) -> None:
    """A setting given twice (an alias, or a tensor and sampling_parameters) must agree."""
    if name in given and str(given[name]) != str(value):
        raise BadRequest(f"{source} ({value}) contradicts {name} ({given[name]}) given in the same request")
    given[name] = value


def _first(array: Any, name: str) -> Any:
    flat = array.reshape(-1)
    if flat.size != 1:
        raise BadRequest(f"{name} must hold exactly one value, got {flat.size}")
    value = flat[0]
    return value.item() if hasattr(value, "item") and not isinstance(value, bytes) else value


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _bool(value: Any, name: str) -> bool:
    if isinstance(value, bool | int) and value in (0, 1):
        return bool(value)
    text = _text(value).strip().lower()
    if text in ("true", "false"):
        return text == "true"
    raise BadRequest(f"{name} must be true or false, got {value!r}")


def _number(value: Any, name: str, kind: type) -> Any:
    try:
        number = kind(_text(value) if isinstance(value, bytes) else value)
    except (TypeError, ValueError):
        raise BadRequest(f"{name} must be a number, got {value!r}") from None
    if kind is int and isinstance(value, float) and value != number:
        raise BadRequest(f"{name} must be a whole number, got {value}")
    return number
