"""Cost-curve probe: how long one target forward of B×T new tokens takes at context L, and one
drafter step, measured on this machine with the runtime's own cache path (median of repeats).
The tuner fits its step-cost model to these points.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

from specdeploy.runtime.cache import KVState


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
            for count in new_tokens:
                chunk = torch.randint(0, vocab, (batch, count), generator=generator)
                ms = _median_ms(kv, _feeder(kv, chunk), repeats)
                out["target"].append({"batch": batch, "new_tokens": count, "context": context, "ms": ms})
            if pair.drafter is not None:
                chunk = torch.randint(0, vocab, (batch, 1), generator=generator)
                kv, feed = _drafter_step(pair.drafter, prefix, chunk, generator)
                out["drafter"].append({"batch": batch, "context": context, "ms": _median_ms(kv, feed, repeats)})
    return out


def _prefilled(model: Any, prefix: torch.Tensor) -> KVState:
    kv = KVState(model, prefix.shape[0])
    kv.forward(prefix, torch.ones(prefix.shape, dtype=torch.bool))
    return kv


def _feeder(kv: KVState, chunk: torch.Tensor) -> Callable[[], Any]:
    return lambda: kv.forward(chunk, torch.ones(chunk.shape, dtype=torch.bool))


def _drafter_step(drafter: Any, prefix: torch.Tensor, chunk: torch.Tensor,
                  generator: torch.Generator) -> tuple[KVState, Callable[[], Any]]:
    """A prefilled drafter cache and one chained draft step on it."""
    from specdeploy.runtime.eagle_model import EagleHead

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


def _median_ms(kv: KVState, feed: Callable[[], Any], repeats: int) -> float:
    base = kv.width
    keep = torch.full((kv.rows,), base)
    times = []
    for i in range(repeats + 1):  # the first run warms up allocators and is dropped
        start = time.perf_counter()
        feed()
        if kv.device.type == "cuda":
            torch.cuda.synchronize()
        elapsed = time.perf_counter() - start
        kv.truncate(keep)
        if i:
            times.append(elapsed * 1e3)
    return statistics.median(times)
