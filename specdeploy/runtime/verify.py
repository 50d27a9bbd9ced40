"""Verification of one row's chain draft against the target's logits: lossless by construction.

Greedy: accept the longest prefix of drafts equal to the target's argmax, then emit the target's own
token (correction, or bonus when all drafts pass). Sampling (Leviathan et al. 2023): accept draft d
with probability min(1, p(d)/q(d)); on rejection resample from normalize(max(0, p - q)); if all pass,
sample the bonus from p. A deterministic drafter (n-gram) has q = point mass on d.
"""

from __future__ import annotations

import torch


def target_probs(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    return torch.softmax(logits.double() / temperature, dim=-1)


def pick(logits: torch.Tensor, temperature: float, generator: torch.Generator) -> int:
    """The next token from one row of logits: argmax at temperature 0, a sample otherwise."""
    if temperature <= 0.0:
        return int(logits.argmax())
    return _sample(target_probs(logits, temperature), generator)


def verify_row(
    logits: torch.Tensor,
    drafts: list[int],
    draft_probs: torch.Tensor | None,
    temperature: float,
    generator: torch.Generator,
) -> tuple[int, int]:
    """(accepted count n, next token) for logits [len(drafts)+1, V] of positions x, d1..dK."""
    if temperature <= 0.0:
        greedy = logits.argmax(-1).tolist()
        n = 0
        while n < len(drafts) and drafts[n] == greedy[n]:
            n += 1
        return n, greedy[n]
    probs = target_probs(logits, temperature)
    for i, token in enumerate(drafts):
        p = probs[i]
        q_token = 1.0 if draft_probs is None else float(draft_probs[i, token])
        u = float(torch.rand((), generator=generator, dtype=torch.float64))
        if q_token > 0.0 and u < min(1.0, float(p[token]) / q_token):
            continue
        if draft_probs is None:
            residual = p.clone()
            residual[token] = 0.0
        else:
            residual = (p - draft_probs[i].to(device=p.device, dtype=p.dtype)).clamp(min=0.0)
        if float(residual.sum()) <= 0.0:  # p == q exactly: rejection has probability 0, keep p
            residual = p
        return i, _sample(residual, generator)
    return len(drafts), _sample(probs[len(drafts)], generator)


def _sample(weights: torch.Tensor, generator: torch.Generator) -> int:
    weights = weights.double().cpu()
    return int(torch.multinomial(weights / weights.sum(), 1, generator=generator))
