"""Prefix reuse under a server's churn: prompts that share a start join while others leave (budget 1 rows that
leave at their admission, EOS, min_tokens holding EOS back), holes squeezed out every few steps, a static cache
that starts tiny and grows, K changing every step; the donor is released long before the prompts that reuse it.
Every output equals transformers' `generate` (same budget, EOS, min_new_tokens) and the drafter drafts exactly
what it drafts with reuse off (the EAGLE head's remembered features are the right ones)."""

from __future__ import annotations

import collections
import itertools

import pytest
import torch

from specdeploy.engines.reference.runtime import cache, engine, static_step
from specdeploy.engines.reference.runtime.drafters import make_drafter
from specdeploy.engines.reference.runtime.engine import Batch, RowSpec
from specdeploy.engines.reference.runtime.models import ModelPair
from specdeploy.engines.reference.runtime.stats import Recorder
from tests.unit.runtime.tiny import noisy_copy, random_prompts, tiny_head, tiny_llama


@torch.no_grad()
def hf_reference(model, prompts, budgets, mins, eos):  # type: ignore[no-untyped-def]
    outs = []
    for p, b, m in zip(prompts, budgets, mins, strict=True):
        ids = torch.tensor([p])
        out = model.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=b,
            min_new_tokens=m,
            do_sample=False,
            eos_token_id=eos,
            pad_token_id=0,
        )
        outs.append(out[0, len(p) :].tolist())
    return outs


def serve(pair: ModelPair, mechanism: str, prompts: list[list[int]], specs: list[RowSpec]) -> tuple[list, list]:
    """A server's loop: at most 3 rows, at most 2 joining per step, K cycling 2, 4, 0, 1, 3; (outputs in prompt
    order, every chain of drafts proposed)."""
    state = make_drafter(mechanism, pair, 0.0, torch.Generator(), 3)
    drafts: list = []
    chain = state.chain  # type: ignore[attr-defined]
    state.chain = lambda *a: (drafts.append((proposed := chain(*a))[0]), proposed)[1]  # type: ignore[attr-defined]
    batch, queue, names, ks = (
        Batch(pair, state, Recorder(8)),
        collections.deque(range(len(prompts))),
        {},
        itertools.cycle([2, 4, 0, 1, 3]),
    )
    try:
        with torch.inference_mode():
            while queue or batch.active:
                take = [queue.popleft() for _ in range(min(3 - len(batch.active), len(queue), 2))]
                if take:
                    rows = [batch.add(prompts[j], specs[j]) for j in take]
                    names.update(zip(rows, take, strict=True))
                    batch.admit(rows)
                if batch.active:
                    batch.step(next(ks))
    finally:
        state.close()
    out: list = [None] * len(prompts)
    for i, j in names.items():
        out[j] = batch.outputs[i]
    return out, drafts


@pytest.mark.parametrize("decode", ["eager", "static"])
@pytest.mark.parametrize("mechanism", ["draft_target", "eagle3"])
def test_reuse_under_churn_matches_generate_and_drafts_as_without_reuse(mechanism, decode, monkeypatch):
    monkeypatch.setattr(cache, "COMPACT_AFTER", 2)
    monkeypatch.setattr(static_step, "MIN_CAPACITY", 8)
    target = tiny_llama(0)
    start = random_prompts(1, 96, seed=103, low=20, high=21)[0]
    tails = random_prompts(8, 96, seed=203, low=1, high=12)
    prompts = [
        start[:10],
        start + tails[0],
        tails[1] + start,
        start[:17],
        start + tails[2],
        start[:16] + tails[3],
        tails[4] * 3,
        start + tails[0],
        start[:18],
        start,
        tails[5] + tails[6],
        start + tails[7] + tails[1],
    ]
    budgets = [1, 1, 9, 27, 4, 14, 2, 22, 11, 6, 18, 25]
    mins = [0, 0, 5, 0, 4, 0, 0, 9, 0, 6, 0, 0]
    free = hf_reference(target, prompts, [30] * len(prompts), [0] * len(prompts), None)
    eos = collections.Counter(t for o in free for t in o[2:]).most_common(1)[0][0]  # ends several answers early
    target.generation_config.eos_token_id = eos
    reference = hf_reference(target, prompts, budgets, mins, eos)
    assert sum(eos in r for r in reference) >= 3 and any(eos in f[:m] for f, m in zip(free, mins, strict=True))
    drafter = noisy_copy(target, 3, 0.3) if mechanism == "draft_target" else tiny_head(target)
    pair = ModelPair(target, drafter, tokenizer=object(), decode=decode)  # a tokenizer makes EOS count
    specs = [RowSpec(b, 0.0, torch.Generator(), min_tokens=m) for b, m in zip(budgets, mins, strict=True)]
    preloads = []
    monkeypatch.setattr(
        cache.KVState,
        "preload",
        lambda self, layers, real=cache.KVState.preload: (preloads.append(layers[0][0].shape[2]), real(self, layers))[
            1
        ],
    )
    out, drafts = serve(pair, mechanism, prompts, specs)
    assert out == reference
    assert len(preloads) >= 3 and min(preloads) >= engine.REUSE_MIN
    monkeypatch.setattr(engine, "REUSE_MIN", 10**6)
    assert serve(pair, mechanism, prompts, specs)[1] == drafts
