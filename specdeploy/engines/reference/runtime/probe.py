"""Cost-curve probe: how long one target forward of B×T new tokens takes at context L, and one
drafter step, measured on this machine with the runtime's own cache path (median of repeats).
The tuner fits its step-cost model to these points.

The points of one (B, L) are timed in rounds that visit each once, not one point after another: on a shared
machine a slow spell then slows every point alike, and the ratios the tuner decides on (T = K + 1 against
T = 1) stay right. Timed one after another, a T = 2 forward measured 1.2x a T = 1 forward in one probe and
1.0x in the next; interleaved over 25 rounds it measured 1.08x.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

from specdeploy.engines.reference.runtime.cache import KVState


@torch.inference_mode()
def probe_costs(
    pair: Any,
    batch_sizes: tuple[int, ...] = (1,),
    new_tokens: tuple[int, ...] = tuple(range(1, 10)),
    contexts: tuple[int, ...] = (128,),
    repeats: int = 5,
    seed: int = 0,
) -> dict:
    """{'target': [{batch, new_tokens, context, ms}], 'drafter': [{batch, context, ms}], 'device': ...}.

    `drafter` is empty when the pair has no drafter model (the n-gram drafter costs no forward). A drafter
    step is one chained draft: one token through the draft model, or through an EAGLE head fed its own hidden
    state (the head has no `input_ids` forward: it reads fused embeddings).
    """
    generator = torch.Generator().manual_seed(seed)
    vocab = int(pair.target.config.vocab_size)
    out: dict = {"device": str(pair.device), "repeats": repeats, "target": [], "drafter": []}
    for batch in batch_sizes:
        for context in contexts:
            prefix = torch.randint(0, vocab, (batch, context), generator=generator)
            kv = _prefilled(pair.target, prefix)
            feeds = [
                (kv, _feeder(kv, torch.randint(0, vocab, (batch, count), generator=generator))) for count in new_tokens
            ]
            if pair.drafter is not None:
                chunk = torch.randint(0, vocab, (batch, 1), generator=generator)
                feeds.append(_drafter_step(pair.drafter, prefix, chunk, generator))
            ms = _interleaved_ms(feeds, repeats)
            out["target"] += [
                {"batch": batch, "new_tokens": count, "context": context, "ms": t}
                for count, t in zip(new_tokens, ms[: len(new_tokens)], strict=True)
            ]
            if pair.drafter is not None:
                out["drafter"].append({"batch": batch, "context": context, "ms": ms[-1]})
    return out


def _prefilled(model: Any, prefix: torch.Tensor) -> KVState:
    kv = KVState(model, prefix.shape[0])
    kv.forward(prefix, torch.ones(prefix.shape, dtype=torch.bool))
    return kv


def _feeder(kv: KVState, chunk: torch.Tensor) -> Callable[[], Any]:
    return lambda: kv.forward(chunk, torch.ones(chunk.shape, dtype=torch.bool))


def _drafter_step(
    drafter: Any, prefix: torch.Tensor, chunk: torch.Tensor, generator: torch.Generator
) -> tuple[KVState, Callable[[], Any]]:
    """A prefilled drafter cache and one chained draft step on it."""
    from specdeploy.engines.reference.runtime.eagle_model import EagleHead

    if not isinstance(drafter, EagleHead):
        kv = _prefilled(drafter, prefix)
        return kv, _feeder(kv, chunk)
    kv = KVState(drafter.body, prefix.shape[0])
    device, width = kv.device, int(drafter.config.hidden_size)

    def own(tokens: torch.Tensor) -> torch.Tensor:
        hidden = torch.randn(*tokens.shape, width, generator=generator).to(device, kv.dtype)
        return drafter.inputs(tokens.to(device), hidden, fused=False)

    kv.forward(None, torch.ones(prefix.shape, dtype=torch.bool), embeds=own(prefix))
    ones = torch.ones(chunk.shape, dtype=torch.bool)
    return kv, lambda: kv.forward(None, ones, last_only=True, embeds=own(chunk))


def _interleaved_ms(feeds: list[tuple[KVState, Callable[[], Any]]], repeats: int) -> list[float]:
    """Median ms of each feed over `repeats` rounds that run every feed once (each rolled back after)."""
    times: list[list[float]] = [[] for _ in feeds]
    for i in range(repeats + 1):  # the first round warms up allocators and is dropped
        for (kv, feed), bucket in zip(feeds, times, strict=True):
            keep = torch.full((kv.rows,), kv.width)
            start = time.perf_counter()
            feed()
            if kv.device.type == "cuda":
                torch.cuda.synchronize()
            elapsed = time.perf_counter() - start
            kv.truncate(keep)
            if i:
                bucket.append(elapsed * 1e3)
    return [statistics.median(bucket) for bucket in times]
