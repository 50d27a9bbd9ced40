"""The EAGLE-3 head's drafter at run time: feeds the head the target's hidden states of every verified
position, then chains K drafts on its own hidden state.

Its cache holds one slot per verified position (made from true target features). The chain's slots
are made from its own guesses, so they are dropped after every verification and the accepted
positions are fed again from the target's features — which the verify forward just produced.
"""

from __future__ import annotations

from typing import Any

import torch

from specdeploy.engines.reference.runtime.cache import KVState
from specdeploy.engines.reference.runtime.drafters import ChainDrafter, right_aligned


class FeatureTap:
    """Forward hooks that keep the latest output of some modules (hidden states, without a second pass)."""

    def __init__(self, modules: list[torch.nn.Module]) -> None:
        self.outputs: list[torch.Tensor | None] = [None] * len(modules)
        self.handles = [m.register_forward_hook(self._keeper(i)) for i, m in enumerate(modules)]

    def _keeper(self, index: int) -> Any:
        def keep(_module: Any, _args: Any, output: Any) -> None:
            self.outputs[index] = output[0] if isinstance(output, tuple) else output

        return keep

    def features(self) -> torch.Tensor:
        assert all(o is not None for o in self.outputs), "no forward seen yet"
        return torch.cat(self.outputs, -1)  # type: ignore[arg-type]

    def close(self) -> None:
        for handle in self.handles:
            handle.remove()


class EagleDrafter(ChainDrafter):
    def __init__(
        self, head: Any, target: Any, temperature: float, generator: torch.Generator, decode: str = "eager"
    ) -> None:
        from specdeploy.engines.reference.runtime.eagle_model import EagleHead
        from specdeploy.engines.reference.runtime.static_step import new_state

        if not isinstance(head, EagleHead):
            raise TypeError("EagleDrafter reads a head drafter (eagle_model.EagleHead)")
        super().__init__(head.draft_vocab, int(head.config.vocab_size), temperature, generator)
        self.head = head
        self.kv = new_state(head.body, 0, decode, role="drafter")
        self.target_tap = FeatureTap([target.model.layers[i] for i in head.feature_layers])
        self.own_tap = FeatureTap([head.body.model.norm])
        self.pending: list[torch.Tensor] = []  # per row: target features of verified positions not fed yet
        self.step_start = 0
        self.fed_width = 0  # the last chunk's width: a static step's hidden states are padded beyond it

    @classmethod
    def for_pair(cls, pair: Any, temperature: float, generator: Any, ngram_match: int) -> EagleDrafter:  # noqa: ARG003
        return cls(pair.drafter, pair.target, temperature, generator, pair.decode)

    def join(self, prompts, reused=0, prefix=None):
        feats = self.target_tap.features()  # the joining prompts' forward (after `reused` cached positions)
        fed = [feats[b, feats.shape[1] - (len(p) - reused) :] for b, p in enumerate(prompts)]
        self.pending += [torch.cat([prefix[:reused], f]) for f in fed] if reused else fed
        self.kv.extend(KVState(self.head.body, len(prompts)))  # their rows: nothing fed yet

    def remember(self, row, length):
        return self.target_tap.features()[row, :length]

    def propose(self, histories, limits):
        # Pending position j pairs with the token after it, which the history now holds.
        tokens, valid = right_aligned([h[len(h) - len(f) :] for h, f in zip(histories, self.pending, strict=True)])
        feats = torch.zeros(*tokens.shape, self.pending[0].shape[-1], dtype=self.pending[0].dtype)
        for b, f in enumerate(self.pending):
            feats[b, tokens.shape[1] - len(f) :] = f
        logits = self._forward(tokens, feats, valid, fused=True)
        self.step_start, self.pending = self.kv.width, []
        return self.chain(logits, limits, self._feed_own)

    def commit(self, accepted, next_tokens):  # noqa: ARG002
        self.kv.truncate(torch.full((len(accepted),), self.step_start))
        feats = self.target_tap.features()  # the verify chunk: x, d1..dK
        self.pending = [feats[b, : 1 + n] for b, n in enumerate(accepted)]

    def select(self, rows):
        self.kv.select(rows)
        self.pending = [self.pending[i] for i in rows.tolist()]

    def close(self) -> None:
        self.target_tap.close()
        self.own_tap.close()

    def _feed_own(self, tokens: torch.Tensor) -> torch.Tensor:
        """A chained step: the head's own last hidden state stands in for the target's features."""
        hidden = self.own_tap.outputs[0]
        assert hidden is not None
        ones = torch.ones(len(tokens), 1, dtype=torch.bool)
        return self._forward(
            tokens[:, None], hidden[: len(tokens), self.fed_width - 1 : self.fed_width], ones, fused=False
        )

    def _forward(self, tokens: torch.Tensor, context: torch.Tensor, valid: torch.Tensor, fused: bool) -> torch.Tensor:
        """Last-position logits after feeding one chunk (the tap keeps the head's hidden states)."""
        device = self.kv.device
        embeds = self.head.inputs(tokens.to(device), context.to(device), fused)
        self.fed_width = tokens.shape[1]
        return self.kv.forward(None, valid, last_only=True, embeds=embeds)[:, -1]
