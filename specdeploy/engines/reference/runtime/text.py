"""Text in, text out: one prompt through `generate` (a server batches in flight instead: serving.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from specdeploy.engines.reference.runtime.stats import RunStats
from specdeploy.errors import UsageError
from specdeploy.prompts import PromptRecord, encode_prompt


@dataclass(frozen=True)
class TextResult:
    text: str
    tokens: list[int]
    stats: RunStats


def generate_text(
    pair: Any,
    prompt: str,
    max_new_tokens: int,
    generate: Callable[..., tuple[list[list[int]], RunStats]],
    mechanism: str = "none",
    draft_len: int = 4,
    temperature: float = 0.0,
    seed: int = 0,
    chat: bool = True,
    ngram_match: int = 3,
) -> TextResult:
    """Encode `prompt` (chat template applied when `chat` and the tokenizer has one), `generate` (the runtime's),
    decode."""
    if pair.tokenizer is None:
        raise UsageError("this model pair has no tokenizer; pass token ids to generate() instead")
    if not prompt:
        raise UsageError("the prompt is empty")
    ids = encode_prompt(pair.tokenizer, PromptRecord("request", "user", (prompt,), raw=not chat))
    outputs, stats = generate(
        pair,
        [ids],
        mechanism,
        draft_len,
        1,
        max_new_tokens,
        temperature=temperature,
        seed=seed,
        ngram_match=ngram_match,
    )
    return TextResult(pair.tokenizer.decode(outputs[0], skip_special_tokens=True), outputs[0], stats)
