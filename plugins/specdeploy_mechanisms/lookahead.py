"""Lookahead decoding: Jacobi-style n-gram generation and verification (engine backend, TRT-LLM <= 1.2.x)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from specdeploy.plugin import CheckContext, Mechanism
from specdeploy.profile.issues import Issue
from specdeploy_mechanisms._common import options

if TYPE_CHECKING:
    from specdeploy_mechanisms._options import LookaheadOptions


def lookahead_draft_len(w: int, n: int, g: int) -> int:
    """D = (0 if N == 1 else N - 2) + (W - 1 + G) * (N - 1), the engine's max_draft_len (docs/design/trtllm.md §6)."""
    return (0 if n == 1 else n - 2) + (w - 1 + g) * (n - 1)


class Lookahead(Mechanism):
    name = "lookahead"
    summary = "lookahead decoding (W, N, G); no drafter; engine backend only (TRT-LLM <= 1.2.x)"
    Options = options("LookaheadOptions")
    chain = False
    support = {"tensorrt": ("1.2",)}
    max_draft_len = 4096

    def fixed_draft_len(self, options: LookaheadOptions) -> int:
        return lookahead_draft_len(options.window_size, options.ngram_size, options.verification_set_size)

    def check(self, ctx: CheckContext) -> Iterator[Issue]:
        derived = self.fixed_draft_len(ctx.options)
        draft_len = ctx.profile.speculative.draft_len
        if isinstance(draft_len, int) and draft_len != derived:
            yield ctx.issue(
                "draft_len",
                f"lookahead's draft length is fixed by (W, N, G) = {derived}, not {draft_len}",
                f"set draft_len: {derived} or draft_len: auto",
            )
