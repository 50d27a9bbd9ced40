"""Drafters: propose up to k tokens per row; told afterwards how many the target accepted. A mechanism names its
drafter class in its plugin (`engines["reference"]`, a `declare.ReferenceDrafter`); the built-ins':

- no mechanism: proposes nothing (plain decoding through the same loop).
- n-gram: prompt lookup; the last `match` tokens (falling back to shorter suffixes) are searched in
  the row's history, most recent occurrence first, and the tokens that followed are proposed.
- draft/target: an external drafter model with the target's vocabulary and its own KV cache.
- EAGLE-3: a head on the target's own hidden states (eagle.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from specdeploy.engines.reference.declare import drafter_of
from specdeploy.engines.reference.runtime.cache import KVState
from specdeploy.engines.reference.runtime.verify import target_probs


class Drafter:
    """Interface; `propose` returns per-row drafts and, for a sampled drafter, q [len, V] per row."""

    def join(self, prompts: list[list[int]], reused: int = 0, prefix: Any = None) -> None:
        """New rows join the batch (appended last), right after the target's forward over their prompts; that
        forward skipped their first `reused` tokens (a cached prefix: `prefix` is what `remember` gave for it)."""

    def remember(self, row: int, length: int) -> Any:  # noqa: ARG002
        """What this drafter needs to reuse the first `length` positions of `row` of the target's last forward
        (a prompt prefix that later prompts share); None: nothing."""
        return None

    def propose(
        self,
        histories: list[list[int]],
        limits: list[int],  # noqa: ARG002
    ) -> tuple[list[list[int]], list[torch.Tensor | None]]:
        raise NotImplementedError

    def commit(self, accepted: list[int], next_tokens: list[int]) -> None:  # noqa: ARG002
        """Row b accepted `accepted[b]` drafts and the target emitted `next_tokens[b]` after them."""

    def select(self, rows: torch.Tensor) -> None:
        """Keep only these rows."""

    def close(self) -> None:
        """The run is over (an EAGLE drafter unhooks the target here)."""


class NoDrafter(Drafter):
    def propose(self, histories, limits):  # noqa: ARG002
        return [[] for _ in histories], [None for _ in histories]


class NgramDrafter(Drafter):
    def __init__(self, match: int) -> None:
        self.match = match

    @classmethod
    def for_pair(cls, pair: Any, temperature: float, generator: Any, ngram_match: int) -> NgramDrafter:  # noqa: ARG003
        return cls(ngram_match)

    def propose(self, histories, limits):
        return [self.lookup(h, k) for h, k in zip(histories, limits, strict=True)], [None for _ in histories]

    def lookup(self, history: list[int], k: int) -> list[int]:
        """Most recent earlier match with k tokens after it, else the match with the most after it."""
        if k <= 0:
            return []
        for size in range(min(self.match, len(history) - 1), 0, -1):
            suffix = history[-size:]
            best: list[int] = []
            for start in range(len(history) - size - 1, -1, -1):
                if history[start : start + size] == suffix:
                    follow = history[start + size : start + size + k]
                    if len(follow) == k:
                        return follow
                    best = follow if len(follow) > len(best) else best
            if best:
                return best
        return []


class ChainDrafter(Drafter):
    """A drafter that chains: pick a token from its logits, feed it, pick the next (draft model, EAGLE head)."""

    def __init__(self, vocab_map: Any, vocab_size: int, temperature: float, generator: torch.Generator) -> None:
        self.vocab_map, self.vocab_size = vocab_map, vocab_size
        self.temperature, self.generator = temperature, generator

    def chain(
        self, logits: torch.Tensor, limits: list[int], feed: Callable[[torch.Tensor], torch.Tensor]
    ) -> tuple[list[list[int]], list[torch.Tensor | None]]:
        """Up to max(limits) drafts per row from the first logits; `feed(tokens)` returns the next logits."""
        kmax = max(limits)
        if kmax == 0:
            return [[] for _ in limits], [None for _ in limits]
        drafts, probs = [], []
        for i in range(kmax):
            tokens, q = choose(logits, self.vocab_map, self.vocab_size, self.temperature, self.generator)
            drafts.append(tokens)
            probs.append(q)
            if i + 1 < kmax:
                logits = feed(tokens)
        chains = torch.stack(drafts, 1).tolist()
        out = [chain[:k] for chain, k in zip(chains, limits, strict=True)]
        sampled = [q for q in probs if q is not None]  # all or none: q exists only when sampling
        qs = [torch.stack([q[row] for q in sampled])[:k] if sampled else None for row, k in enumerate(limits)]
        return out, qs


class ModelDrafter(ChainDrafter):
    """Autoregressive chain from a draft model; its cache holds the first `fed[b]` history tokens."""

    def __init__(self, model: Any, temperature: float, generator: torch.Generator, decode: str = "eager") -> None:
        from specdeploy.engines.reference.runtime.static_step import new_state

        super().__init__(getattr(model, "draft_vocab", None), int(model.config.vocab_size), temperature, generator)
        self.kv = new_state(model, 0, decode, role="drafter")
        self.fed: list[int] = []
        self.step_start = self.chunk = self.chained = 0

    @classmethod
    def for_pair(cls, pair: Any, temperature: float, generator: Any, ngram_match: int) -> ModelDrafter:  # noqa: ARG003
        return cls(pair.drafter, temperature, generator, pair.decode)

    def join(self, prompts, reused=0, prefix=None):  # noqa: ARG002 - it prefills whole prompts itself
        fresh = KVState(self.kv.model, len(prompts))
        tokens, valid = right_aligned(prompts)
        fresh.forward(tokens, valid, last_only=True)
        self.kv.extend(fresh)
        self.fed += [len(p) for p in prompts]

    def propose(self, histories, limits):
        self.step_start, self.chunk, self.chained = self.kv.width, 0, 0
        if max(limits) == 0:
            return [[] for _ in histories], [None for _ in histories]
        logits = self._feed([h[f:] for h, f in zip(histories, self.fed, strict=True)])  # tokens it has not seen yet
        self.fed = [len(h) for h in histories]
        self.chunk = self.kv.width - self.step_start
        self.chained = max(limits) - 1  # the chain feeds every draft but the last
        return self.chain(logits, limits, self._feed_one)

    def _feed_one(self, tokens: torch.Tensor) -> torch.Tensor:
        ones = torch.ones(len(tokens), 1, dtype=torch.bool)
        return self.kv.forward(tokens[:, None], ones, last_only=True)[:, -1]

    def commit(self, accepted, next_tokens):  # noqa: ARG002
        # Accepted drafts it fed stay cached; rejected ones (and everything after) become holes. The
        # last draft (never fed) and the target's token are picked up from the history next step.
        kept = [min(n, self.chained) for n in accepted]
        self.kv.truncate(torch.tensor([self.step_start + self.chunk + k for k in kept]))
        self.fed = [f + k for f, k in zip(self.fed, kept, strict=True)]

    def select(self, rows):
        self.kv.select(rows)
        self.fed = [self.fed[i] for i in rows.tolist()]

    def _feed(self, rows: list[list[int]]) -> torch.Tensor:
        tokens, valid = right_aligned(rows)
        return self.kv.forward(tokens, valid, last_only=True)[:, -1]


def right_aligned(rows: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Variable-length token lists as one [B, w] chunk, right-aligned with holes on the left."""
    width = max(len(r) for r in rows)
    tokens = torch.zeros(len(rows), width, dtype=torch.long)
    valid = torch.zeros(len(rows), width, dtype=torch.bool)
    for i, r in enumerate(rows):
        if r:
            tokens[i, width - len(r) :] = torch.tensor(r)
            valid[i, width - len(r) :] = True
    return tokens, valid


def choose(
    logits: torch.Tensor, vocab_map: Any, vocab_size: int, temperature: float, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Next draft per row (mapped to full ids) and, when sampling, q over the full vocabulary."""
    if temperature <= 0.0:
        local = logits.argmax(-1)
        return (local if vocab_map is None else vocab_map[local]).cpu(), None
    q_local = target_probs(logits, temperature).cpu()
    local = torch.multinomial(q_local, 1, generator=generator)[:, 0]
    if vocab_map is None:
        return local, q_local
    q = torch.zeros(q_local.shape[0], vocab_size, dtype=q_local.dtype)
    q[:, vocab_map.cpu()] = q_local
    return vocab_map.cpu()[local], q


def make_drafter(mechanism: str, pair: Any, temperature: float, generator, ngram_match: int) -> Drafter:
    declared = drafter_of(mechanism)
    return NoDrafter() if declared is None else declared.build(pair, temperature, generator, ngram_match)
