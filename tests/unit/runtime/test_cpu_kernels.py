"""The CPU kernels change speed, not results: GQA attention equals transformers' SDPA path, fp16-packed
linears equal the same model with fp16-rounded weights, and greedy speculation stays lossless on them."""

from __future__ import annotations

import copy

import pytest
import torch

from specdeploy.engines.reference.runtime import generate
from specdeploy.engines.reference.runtime.cache import KVState
from specdeploy.engines.reference.runtime.cpu_kernels import (
    Fp16Linear,
    available,
    optimize_for_cpu,
    weights_description,
)
from specdeploy.engines.reference.runtime.models import ModelPair
from tests.unit.runtime.tiny import noisy_copy, random_prompts, repetitive_prompts, tiny_llama


@torch.no_grad()
def _logits_with_holes(model) -> torch.Tensor:
    """Prefill with left padding, then a 4-token verify chunk, then roll back and a 3-token chunk with a hole."""
    kv = KVState(model, 2)
    tokens = torch.tensor([[0, 0, 5, 6, 7], [8, 9, 10, 11, 12]])
    kv.forward(tokens, torch.tensor([[False, False, True, True, True], [True] * 5]))
    first = kv.forward(torch.tensor([[20, 21, 22, 23], [30, 31, 32, 33]]), torch.ones(2, 4, dtype=torch.bool))
    kv.truncate(torch.tensor([6, 8]))
    second = kv.forward(torch.tensor([[40, 41, 42], [50, 51, 52]]), torch.tensor([[True, False, True]] * 2))
    return torch.cat([first, second], 1)


def test_gqa_attention_matches_transformers_sdpa():
    model = tiny_llama(0)  # 4 query heads over 2 KV heads; float64, so only the attention path changes
    expected = _logits_with_holes(model)
    fast = optimize_for_cpu(copy.deepcopy(model))
    assert fast.config._attn_implementation != model.config._attn_implementation
    assert torch.allclose(_logits_with_holes(fast), expected, atol=1e-9)


@pytest.mark.skipif(not available(), reason="FBGEMM needs an x86 CPU with AVX2")
def test_fp16_linears_equal_the_fp16_rounded_model():
    model = tiny_llama(0).float()
    rounded = copy.deepcopy(model)
    for module in rounded.modules():
        if isinstance(module, torch.nn.Linear):  # a new Parameter: the tied embedding keeps fp32, as when packed
            module.weight = torch.nn.Parameter(module.weight.detach().half().float())
    fast = optimize_for_cpu(copy.deepcopy(model))
    assert not any(isinstance(m, torch.nn.Linear) for m in fast.modules())
    assert sum(isinstance(m, Fp16Linear) for m in fast.modules()) == 2 * 7 + 1  # 7 per layer + LM head
    assert weights_description(fast).startswith("fp16") and weights_description(model) == "float32"
    assert torch.allclose(_logits_with_holes(fast), _logits_with_holes(rounded), atol=1e-4)


@pytest.mark.skipif(not available(), reason="FBGEMM needs an x86 CPU with AVX2")
def test_greedy_speculation_is_lossless_on_packed_weights():
    target = tiny_llama(0).float()
    drafter = optimize_for_cpu(noisy_copy(target, 3, 0.3))
    pair = ModelPair(optimize_for_cpu(target), drafter)
    prompts = random_prompts(6, 96, seed=1) + repetitive_prompts(4, 96, seed=2)
    plain, _ = generate(pair, prompts, "none", 0, 1, 10)
    for k in (1, 3, 6):
        for mechanism in ("draft_target", "ngram"):
            out, stats = generate(pair, prompts, mechanism, k, 3, 10)
            assert out == plain, f"{mechanism} K={k}"
    assert stats.drafted_tokens > 0
