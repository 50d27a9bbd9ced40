"""The context of a decode step the performance model assumes where the prompts are unknown: `plan`'s advice and
`tune --backend model` predict at the same one."""

from __future__ import annotations

PROMPT_TOKENS = 512
"""Assumed prompt length where the dataset's is unknown (the context of a decode step = prompt + half the output)."""


def decode_context(output_len: int) -> int:
    """Tokens in the context of an average decode step of a `output_len`-token answer (`tune.output_len`)."""
    return PROMPT_TOKENS + output_len // 2


def context_text(output_len: int) -> str:
    return (
        f"context {decode_context(output_len)} tokens: a {PROMPT_TOKENS}-token prompt + half of tune.output_len "
        f"{output_len}"
    )
