"""Verification of one row's chain draft against the target's logits: lossless by construction.

Greedy: accept the longest prefix of drafts equal to the target's argmax, then emit the target's own
token (correction, or bonus when all drafts pass). Sampling (Leviathan et al. 2023): accept draft d
with probability min(1, p(d)/q(d)); on rejection resample from normalize(max(0, p - q)); if all pass,
sample the bonus from p. A deterministic drafter (n-gram) has q = point mass on d.
"""

from __future__ import annotations

import torch


def target_probs(logits: torch.Tensor, temperature: float, top_k: int = 0, top_p: float = 1.0) -> torch.Tensor:
    """The distribution sampled from: softmax at `temperature`, cut to the `top_k` most likely tokens (0: all)
    and to the smallest set holding `top_p` of the mass (1: all), renormalized. Verification against the cut
    distribution keeps speculation exact for it."""
    probs = torch.softmax(logits.double() / temperature, dim=-1)
    if top_k <= 0 and top_p >= 1.0:
        return probs
    ordered, index = probs.sort(-1, descending=True)
    keep = torch.ones_like(ordered, dtype=torch.bool)
    if top_k > 0:
        keep[..., top_k:] = False
    if top_p < 1.0:
        keep &= (ordered.cumsum(-1) - ordered) < top_p  # the token that crosses top_p stays in
    cut = torch.zeros_like(probs).scatter(-1, index, ordered * keep)
    return cut / cut.sum(-1, keepdim=True)


def pick(
    logits: torch.Tensor, temperature: float, generator: torch.Generator, top_k: int = 0, top_p: float = 1.0
) -> int:
    """The next token from one row of logits: argmax at temperature 0, a sample otherwise."""
    if temperature <= 0.0:
        return int(logits.argmax())
    return _sample(target_probs(logits, temperature, top_k, top_p), generator)


def verify_row(
    logits: torch.Tensor,
    drafts: list[int],
    draft_probs: torch.Tensor | None,
    temperature: float,
    generator: torch.Generator,
    top_k: int = 0,
    top_p: float = 1.0,
) -> tuple[int, int]:
    """(accepted count n, next token) for logits [len(drafts)+1, V] of positions x, d1..dK. A greedy drafter's
    draft (`draft_probs` None) is a point mass, which keeps sampled rows exact behind a greedy chain."""
    if temperature <= 0.0:
        greedy = logits.argmax(-1).tolist()
        n = 0
        while n < len(drafts) and drafts[n] == greedy[n]:
            n += 1
        return n, greedy[n]
    probs = target_probs(logits, temperature, top_k, top_p)
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
