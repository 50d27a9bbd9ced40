"""Lookahead decoding: Jacobi-style n-gram generation and verification (engine backend, TRT-LLM <= 1.2.x)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from specdeploy.engines.trtllm.declare import TrtllmEngineBuild
from specdeploy.issues import Issue
from specdeploy.plugin import AcceptancePrior, CheckContext, Mechanism
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
    engines = {
        "tensorrt": TrtllmEngineBuild(
            decoding_type={"1.2": "Lookahead"},
            mode="lookahead_decoding",
            modelopt=True,
            triton=lambda o: {
                "decoding_mode": "lookahead",
                "lookahead": (o.window_size, o.ngram_size, o.verification_set_size),
            },
            repo_draft_len=lambda p: _repo_draft_len(p),
            unconfirmed=("1.2.build_plugin_flags",),
            sources={"mode": "trtllm-build --speculative_decoding_mode choices (tables/trtllm-1.2.1.json)"},
        ),
    }
    max_draft_len = 4096
    drafting = "none"
    training = "none"
    prior = AcceptancePrior(
        rates=(0.45, 0.45), basis="i.i.d. alpha = 0.45 (1.5-2.3x on one GPU)", source="lmsys blog 2023-11-21"
    )

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

    def draft_cost(self, ctx: Any, batch: int, k: int) -> float:
        """No drafter forward: the lookahead branch rides in the target's verification step."""
        return 0.0


def _repo_draft_len(params: Mapping[str, str]) -> tuple[int, str, str] | None:
    """The draft tokens a rendered lookahead model's (W, N, G) parameters need."""
    keys = ("lookahead_window_size", "lookahead_ngram_size", "lookahead_verification_set_size")
    if params.get("decoding_mode") != "lookahead" or not all(params.get(k, "").isdigit() for k in keys):
        return None
    w, n, g = (int(params[k]) for k in keys)
    return lookahead_draft_len(w, n, g), f"lookahead (W, N, G) = ({w}, {n}, {g})", keys[0]
