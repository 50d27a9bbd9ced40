"""The CPU (or CUDA) reference runtime: real speculative decoding in PyTorch, a lossless-ness oracle.

Public API (stable; the tuner, the Triton python model and the CLI call exactly this):

    load_pair(target_ref, drafter_ref=None, device=None, cpu_kernels=True, decode=None) -> ModelPair
    load_pair_for(target_ref, mechanism, draft_model) -> ModelPair
    generate(pair, prompts, mechanism, draft_len, concurrency, max_new_tokens,
             temperature=0.0, seed=0, ngram_match=3) -> (list[list[int]], RunStats)
    probe_costs(pair, batch_sizes=(1,), new_tokens=(1, ..., 9), contexts=(128,), repeats=5, seed=0) -> dict
    generate_text(pair, prompt: str, max_new_tokens, mechanism="none", draft_len=4, temperature=0.0,
                  seed=0, chat=True, ngram_match=3) -> TextResult(text, tokens, stats)

This module imports no torch at import time; the heavy modules load on first call.
"""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING, Any

from specdeploy._io import write_json_atomic, write_text_atomic
from specdeploy.engines.reference.declare import DRAFTER_KINDS, needs_model, reads, runnable
from specdeploy.engines.reference.runtime.stats import RunStats, expected_al
from specdeploy.errors import UsageError

if TYPE_CHECKING:
    from specdeploy.engines.reference.runtime.models import ModelPair

MAX_DRAFT_LEN = 32

__all__ = [
    "ModelPair",
    "RunStats",
    "expected_al",
    "generate",
    "generate_text",
    "load_pair",
    "load_pair_for",
    "probe_costs",
    "write_json_atomic",
    "write_text_atomic",
]


def load_pair(
    target_ref: str,
    drafter_ref: str | None = None,
    device: str | None = None,
    cpu_kernels: bool = True,
    decode: str | None = None,
) -> ModelPair:
    """Load a target and optional drafter by reference (see models.py for what a reference can be); `decode` is
    the decode mode (eager, static, graphs, compile; default $SPECDEPLOY_DECODE, else eager)."""
    from specdeploy.engines.reference.runtime import models

    return models.load_pair(target_ref, drafter_ref, device, cpu_kernels, decode)


def load_pair_for(target_ref: str, mechanism: str, draft_model: str | None) -> ModelPair:
    """The pair a profile's mechanism needs: the drafter is loaded only for mechanisms that draft with one."""
    return load_pair(target_ref, draft_model if needs_model(mechanism) else None)


def __getattr__(name: str) -> Any:
    if name == "ModelPair":
        from specdeploy.engines.reference.runtime.models import ModelPair

        return ModelPair
    raise AttributeError(name)


def generate(
    pair: ModelPair,
    prompts: list[list[int]],
    mechanism: str,
    draft_len: int,
    concurrency: int,
    max_new_tokens: int,
    temperature: float = 0.0,
    seed: int = 0,
    ngram_match: int = 3,
) -> tuple[list[list[int]], RunStats]:
    """Decode every prompt (token ids) with speculation; outputs are the generated ids per prompt.

    Greedy (temperature 0) output equals plain greedy decoding; sampled output has the target's
    distribution. At most `concurrency` prompts decode in one batch; a finished one's slot is refilled
    from the queue at once (in-flight batching). A drafter accepting far less than its training record
    promises is reported on stderr and in `stats.warnings` (health.py).
    """
    import torch

    from specdeploy.engines.reference.runtime import health
    from specdeploy.engines.reference.runtime.engine import run_batched
    from specdeploy.engines.reference.runtime.stats import Recorder

    _validate(pair, prompts, mechanism, draft_len, concurrency, max_new_tokens, temperature, ngram_match)
    k = 0 if mechanism == "none" else draft_len
    generator = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    rec = Recorder(k)
    start = time.perf_counter()
    prompts = [list(p) for p in prompts]
    outputs = run_batched(
        pair, prompts, mechanism, k, concurrency, max_new_tokens, temperature, generator, ngram_match, rec
    )
    stats = rec.finish(
        time.perf_counter() - start,
        mechanism=mechanism,
        draft_len=k,
        concurrency=concurrency,
        temperature=temperature,
        num_prompts=len(prompts),
    )
    warning = health.observe(pair, mechanism, *rec.take_first_drafts())
    return outputs, dataclasses.replace(stats, warnings=(warning,)) if warning else stats


def probe_costs(pair: ModelPair, **kwargs: Any) -> dict:
    """Step-cost curve for the tuner; see `specdeploy.engines.reference.runtime.probe.probe_costs`."""
    from specdeploy.engines.reference.runtime.probe import probe_costs as _probe

    return _probe(pair, **kwargs)


def generate_text(pair: ModelPair, prompt: str, max_new_tokens: int, **kwargs: Any) -> Any:
    """Text prompt in, `TextResult(text, tokens, stats)` out; see `specdeploy.engines.reference.runtime.text`."""
    from specdeploy.engines.reference.runtime.text import generate_text as _generate_text

    return _generate_text(pair, prompt, max_new_tokens, generate, **kwargs)


def _validate(pair, prompts, mechanism, draft_len, concurrency, max_new_tokens, temperature, ngram_match) -> None:
    _validate_options(pair, mechanism, draft_len, concurrency, max_new_tokens, temperature, ngram_match)
    _validate_prompts(pair, prompts, max_new_tokens, draft_len)


def _validate_options(pair, mechanism, draft_len, concurrency, max_new_tokens, temperature, ngram_match) -> None:
    if mechanism not in runnable():
        raise UsageError(f"unknown mechanism {mechanism!r}", hint=f"choose one of {', '.join(runnable())}")
    wanted = reads(mechanism)
    if wanted is not None:
        from specdeploy.engines.reference.runtime.models import drafter_kind

        kind = drafter_kind(pair.drafter)
        if kind != wanted:
            have = f"its drafter is of kind {kind}" if kind else "it has no drafter"
            raise UsageError(
                f"mechanism {mechanism} needs a drafter of kind {wanted} ({DRAFTER_KINDS[wanted]}); {have}",
                hint="pass a drafter reference of that kind",
            )
    if mechanism != "none" and not 1 <= draft_len <= MAX_DRAFT_LEN:
        raise UsageError(f"draft length must be between 1 and {MAX_DRAFT_LEN}, got {draft_len}")
    if concurrency < 1:
        raise UsageError(f"concurrency must be at least 1, got {concurrency}")
    if max_new_tokens < 1:
        raise UsageError(f"max new tokens must be at least 1, got {max_new_tokens}")
    if temperature < 0:
        raise UsageError(f"temperature must be >= 0, got {temperature}")
    if ngram_match < 1:
        raise UsageError(f"n-gram match size must be at least 1, got {ngram_match}")


def _validate_prompts(pair, prompts, max_new_tokens, draft_len) -> None:
    if not prompts:
        raise UsageError("no prompts given")
    vocab, context = pair.target.config.vocab_size, pair.max_context
    for i, prompt in enumerate(prompts):
        if len(prompt) == 0:
            raise UsageError(f"prompt {i} is empty")
        if len(prompt) + max_new_tokens + draft_len > context:
            raise UsageError(
                f"prompt {i} has {len(prompt)} tokens; with {max_new_tokens} new tokens it exceeds "
                f"the model's context of {context} tokens",
                hint="shorten the prompt or lower max new tokens",
            )
        if min(prompt) < 0 or max(prompt) >= vocab:
            raise UsageError(f"prompt {i} holds token ids outside the vocabulary (0..{vocab - 1})")
