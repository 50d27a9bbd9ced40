"""Tiny randomly initialised Llama models (float64, so argmax ties between a 1-token and a K-token
forward cannot flip) and prompt sets for the runtime tests."""

from __future__ import annotations

from typing import Any

import torch

torch.set_num_threads(1)  # tiny matmuls: thread hand-offs cost more than they save on a loaded box


MAX_NEW = 12
"""New tokens each lossless test decodes per prompt."""


def tiny_llama(seed: int, layers: int = 2, vocab: int = 96, hidden: int = 48, init: float = 0.3, context: int = 256):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=vocab,
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=context,
        tie_word_embeddings=True,
        initializer_range=init,
    )
    return LlamaForCausalLM(config).to(torch.float64).eval()


def noisy_copy(model, seed: int, scale: float):
    """A drafter close to the target: accepts often but not always (exercises partial rollback)."""
    import copy

    clone = copy.deepcopy(model)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in clone.parameters():
            p.add_(torch.randn(p.shape, generator=gen, dtype=p.dtype) * scale * p.std())
    return clone


def random_prompts(count: int, vocab: int, seed: int, low: int = 2, high: int = 24) -> list[list[int]]:
    gen = torch.Generator().manual_seed(seed)
    lengths = torch.randint(low, high, (count,), generator=gen).tolist()
    return [torch.randint(0, vocab, (n,), generator=gen).tolist() for n in lengths]


def repetitive_prompts(count: int, vocab: int, seed: int) -> list[list[int]]:
    """Prompts that repeat a short motif, so n-gram lookup finds matches."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    for i in range(count):
        motif = torch.randint(0, vocab, (3 + i % 4,), generator=gen).tolist()
        out.append((motif * 6)[: 8 + 2 * (i % 5)])
    return out


@torch.no_grad()
def hf_greedy(model, prompts: list[list[int]], max_new: int) -> list[list[int]]:
    """Plain greedy decoding by transformers' own `generate`, one prompt at a time: the reference."""
    outs = []
    for p in prompts:
        ids = torch.tensor([p])
        ids = model.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=max_new,
            do_sample=False,
            eos_token_id=None,
            pad_token_id=0,
        )
        outs.append(ids[0, len(p) :].tolist())
    return outs


def tiny_head(target, seed: int = 5):
    """An untrained EAGLE head for `target` (reads its layers 0 and 1)."""
    from specdeploy.engines.reference.runtime.eagle_model import EagleHead
    from specdeploy.engines.reference.runtime.shared_drafter import share_embeddings

    config = target.config.__class__.from_dict({**target.config.to_dict(), "num_hidden_layers": 1})
    torch.manual_seed(seed)
    head = EagleHead(config, (0, 1)).to(target.dtype).eval()
    share_embeddings(head.body, target)
    return head


def run_inflight(loop: Any, jobs: list[tuple[list[int], Any, int | None]]) -> list[list[Any]]:
    """Submit every job (ids, RowSpec, K) to the in-flight loop from its own thread at once; the steps each one was
    told about."""
    import threading

    from specdeploy.engines.reference.runtime.serving import Emitted, Request

    seen: list[list[Emitted]] = [[] for _ in jobs]
    done = [threading.Event() for _ in jobs]

    def emit(i: int):  # type: ignore[no-untyped-def]
        def record(step: Emitted) -> bool:
            seen[i].append(step)
            if step.finished:
                done[i].set()
            return False

        return record

    threads = [
        threading.Thread(target=loop.submit, args=(Request(ids, spec, emit(i), print, k),))
        for i, (ids, spec, k) in enumerate(jobs)
    ]
    for t in threads:
        t.start()
    for event in done:
        assert event.wait(120)
    return seen


def greedy(budget: int, min_tokens: int = 0) -> Any:
    """A greedy row of `budget` tokens (a RowSpec)."""
    from specdeploy.engines.reference.runtime.engine import RowSpec

    return RowSpec(budget, 0.0, torch.Generator(), min_tokens=min_tokens)


def drafting(pair, monkeypatch, *args):
    """generate(pair, *args) with a spy on ChainDrafter.chain: (outputs, stats, every chain of drafts proposed, in
    order)."""
    from specdeploy.engines.reference.runtime import generate
    from specdeploy.engines.reference.runtime.drafters import ChainDrafter

    seen, chain = [], ChainDrafter.chain

    def spy(self, *a, **kw):
        drafts = chain(self, *a, **kw)
        seen.append(drafts[0])
        return drafts

    monkeypatch.setattr(ChainDrafter, "chain", spy)
    out, stats = generate(pair, *args)
    monkeypatch.setattr(ChainDrafter, "chain", chain)
    return out, stats, seen
