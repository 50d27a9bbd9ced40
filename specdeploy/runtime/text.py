"""Text in, text out: the convenience wrapper a server (the Triton python model) needs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from specdeploy.errors import UsageError
from specdeploy.runtime.prompts import PromptRecord, encode_prompt
from specdeploy.runtime.stats import RunStats


@dataclass(frozen=True)
class TextResult:
    text: str
    tokens: list[int]
    stats: RunStats


def generate_text(
    pair: Any,
    prompt: str,
    max_new_tokens: int,
    mechanism: str = "none",
    draft_len: int = 4,
    temperature: float = 0.0,
    seed: int = 0,
    chat: bool = True,
    ngram_match: int = 3,
    max_seq_len: int | None = None,
) -> TextResult:
    """Encode `prompt` (chat template applied when `chat` and the tokenizer has one), generate, decode;
    `max_seq_len` (a server's limit) refuses a prompt that leaves no room for `max_new_tokens`."""
    from specdeploy.runtime import generate

    if pair.tokenizer is None:
        raise UsageError("this model pair has no tokenizer; pass token ids to generate() instead")
    if not prompt:
        raise UsageError("the prompt is empty")
    ids = encode_prompt(pair.tokenizer, PromptRecord("request", "user", (prompt,), raw=not chat))
    if max_seq_len is not None and len(ids) + max_new_tokens > max_seq_len:
        raise UsageError(f"the prompt has {len(ids)} tokens: with max_tokens {max_new_tokens} that exceeds "
                         f"max_seq_len {max_seq_len}", hint="shorten the prompt or lower max_tokens")
    outputs, stats = generate(
        pair, [ids], mechanism, draft_len, 1, max_new_tokens, temperature=temperature, seed=seed,
        ngram_match=ngram_match,
    )
    return TextResult(pair.tokenizer.decode(outputs[0], skip_special_tokens=True), outputs[0], stats)
