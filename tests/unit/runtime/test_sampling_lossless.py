"""Rejection-sampling verification keeps the target's distribution: the joint law of the first two
generated tokens (the second depends on what was accepted) matches the exact one, chi-square."""

from __future__ import annotations

import pytest
import torch

from specdeploy.engines.reference.runtime import engine, generate
from specdeploy.engines.reference.runtime.models import ModelPair
from tests.unit.runtime.tiny import tiny_llama

VOCAB, SAMPLES = 8, 3000
PROMPT = [1, 2, 3, 1, 2, 3, 1, 2]  # repetitive: the n-gram drafter proposes "3 1 ..." every time


@pytest.fixture(scope="module")
def target():
    return tiny_llama(0, vocab=VOCAB, hidden=32, init=0.3)  # flat enough that a wrong residual shows


def exact_joint(model, temperature: float) -> torch.Tensor:
    with torch.no_grad():
        first = torch.softmax(model(torch.tensor([PROMPT])).logits[0, -1] / temperature, -1)
        rows = [
            torch.softmax(model(torch.tensor([[*PROMPT, t]])).logits[0, -1] / temperature, -1) for t in range(VOCAB)
        ]
    return first[:, None] * torch.stack(rows)


def chi_square_p(counts: torch.Tensor, probs: torch.Tensor) -> float:
    expected = probs.flatten() * counts.sum()
    observed = counts.flatten().double()
    big = expected >= 5
    exp = torch.cat([expected[big], expected[~big].sum()[None]])
    obs = torch.cat([observed[big], observed[~big].sum()[None]])
    stat = float(((obs - exp) ** 2 / exp.clamp(min=1e-12)).sum())
    df = len(exp) - 1
    half = torch.tensor([df / 2, stat / 2], dtype=torch.float64)
    return float(torch.special.gammaincc(half[0], half[1]))


def sample_joint(pair, mechanism: str, temperature: float, seed: int) -> tuple[torch.Tensor, object]:
    out, stats = generate(pair, [PROMPT] * SAMPLES, mechanism, 2, 100, 4, temperature=temperature, seed=seed)
    counts = torch.zeros(VOCAB, VOCAB)
    for tokens in out:
        counts[tokens[0], tokens[1]] += 1
    return counts, stats


@pytest.mark.parametrize("mechanism,temperature", [("draft_target", 1.0), ("ngram", 1.0), ("draft_target", 0.7)])
def test_first_two_tokens_follow_the_target(target, mechanism, temperature):
    drafter = tiny_llama(5, layers=1, vocab=VOCAB, hidden=32, init=1.0)
    counts, stats = sample_joint(ModelPair(target, drafter), mechanism, temperature, seed=11)
    assert stats.accepted_tokens > 0 and stats.accepted_tokens < stats.drafted_tokens  # both paths taken
    assert chi_square_p(counts, exact_joint(target, temperature)) > 0.01


def test_resampling_from_p_instead_of_the_residual_is_caught(target, monkeypatch):
    """Negative control: the classic bug (resample from p after a rejection) must fail the same test."""
    real = engine.verify_row

    def buggy(logits, drafts, q, temperature, generator, *cut):
        n, token = real(logits, drafts, q, temperature, generator, *cut)
        if n < len(drafts):
            token = int(torch.multinomial(torch.softmax(logits[n].double() / temperature, -1), 1, generator=generator))
        return n, token

    monkeypatch.setattr(engine, "verify_row", buggy)
    drafter = tiny_llama(5, layers=1, vocab=VOCAB, hidden=32, init=1.0)
    counts, _ = sample_joint(ModelPair(target, drafter), "draft_target", 1.0, seed=11)
    assert chi_square_p(counts, exact_joint(target, 1.0)) < 0.01


def test_same_seed_same_samples(target):
    drafter = tiny_llama(5, layers=1, vocab=VOCAB, hidden=32, init=1.0)
    pair = ModelPair(target, drafter)
    a, _ = generate(pair, [PROMPT] * 20, "draft_target", 3, 4, 6, temperature=1.0, seed=3)
    b, _ = generate(pair, [PROMPT] * 20, "draft_target", 3, 4, 6, temperature=1.0, seed=3)
    assert a == b
