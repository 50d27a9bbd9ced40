"""A batched KV cache with a per-slot validity mask, so every row can roll back on its own.

Rows of one batch accept different numbers of drafted tokens. Instead of re-padding after every
step, rejected slots become holes (masked out of attention, never attended again), the common tail
that no row needs is cropped (`DynamicCache.crop(-n)`, the 5.x negative-count form), and holes are
squeezed out once every row carries enough of them. Position ids count valid slots only, so a row's
positions never see its holes or its left padding.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import torch

from specdeploy.engines.reference.runtime.stack import cache_keyword, check_transformers
from specdeploy.errors import MissingDependency

if TYPE_CHECKING:
    from transformers.cache_utils import DynamicLayer

COMPACT_AFTER = 32  # squeeze holes once every row has at least this many
check_transformers()  # before anything decodes: an untested release may ignore the cache without an error


class KVState:
    """One model's cache for a batch: `mask[b, s]` says whether slot s of row b holds a live token."""

    def __init__(self, model: Any, batch: int) -> None:
        from transformers import DynamicCache

        self.model = model
        self.device = next(model.parameters()).device
        self.dtype = next(model.parameters()).dtype
        self.cache = DynamicCache()
        self.keyword = cache_keyword(model)  # `past_key_values` before transformers 5.24, `cache` from 5.24 on
        self.mask = torch.zeros(batch, 0, dtype=torch.bool, device=self.device)

    @property
    def width(self) -> int:
        return int(self.mask.shape[1])

    def forward(
        self,
        tokens: torch.Tensor | None,
        valid: torch.Tensor,
        last_only: bool = False,
        embeds: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Append a [B, w] chunk (holes where `valid` is False); return its logits [B, w or 1, V].

        `embeds` [B, w, H] replaces the token embedding (an EAGLE drafter's fused inputs)."""
        valid = valid.to(self.device)
        width, chunk = self.width, valid.shape[1]
        positions = (self.mask.sum(1, keepdim=True) + valid.long().cumsum(1) - 1).clamp(min=0)
        full = torch.cat([self.mask, valid], 1)
        bias = None  # no hole anywhere: plain causal attention, transformers' own (fast SDPA) path
        if not bool(full.all()):
            keys = torch.arange(width + chunk, device=self.device)
            queries = width + torch.arange(chunk, device=self.device)
            causal = keys[None, :] <= queries[:, None]
            allowed = (full[:, None, :] & causal[None]) | (keys[None, :] == queries[:, None])[None]
            bias = torch.zeros(allowed.shape, dtype=self.dtype, device=self.device)
            bias.masked_fill_(~allowed, torch.finfo(self.dtype).min)  # own slot always visible: no empty row
            bias = bias[:, None]
        out = self.model(
            input_ids=None if tokens is None else tokens.to(self.device),
            inputs_embeds=embeds,
            attention_mask=bias,
            position_ids=positions,
            use_cache=True,
            logits_to_keep=1 if last_only else 0,
            **{self.keyword: self.cache},
        )
        if self.cache.get_seq_length() != width + chunk:  # a cache the model ignored: every token would be wrong
            raise MissingDependency(
                f"the model did not fill its KV cache ({self.cache.get_seq_length()} slots, "
                f"expected {width + chunk}): this transformers ignores `{self.keyword}=`"
            )
        self.mask = full
        return out.logits

    def truncate(self, keep: torch.Tensor) -> None:
        """Row b keeps slots [0, keep[b]); later slots become holes, the all-hole tail is cropped."""
        slots = torch.arange(self.width, device=self.device)
        self.mask &= slots[None, :] < keep.to(self.device)[:, None]
        live = self.mask.any(0).nonzero()
        new_width = int(live.max()) + 1 if live.numel() else 0
        if new_width < self.width:
            self.cache.crop(-(self.width - new_width))
            self.mask = self.mask[:, :new_width]
        holes = (~self.mask).sum(1)
        if holes.numel() and int(holes.min()) >= COMPACT_AFTER:
            self.compact()

    @property
    def rows(self) -> int:
        return int(self.mask.shape[0])

    def extend(self, other: KVState) -> None:
        """Append `other`'s rows (requests that joined the running batch); the narrower side is left-padded
        with holes. Either side may have cached nothing yet (an EAGLE drafter's new rows): all holes."""
        if self.rows == 0:  # everyone left: start afresh rather than pad to a stale width
            self.cache, self.mask = other.cache, other.mask.to(self.device)
            return
        width = max(self.width, other.width)
        mine, theirs = self._layers(), other._layers()
        if mine or theirs:
            ref = (mine or theirs)[0][0]
            joined = []
            for i in range(len(mine or theirs)):
                kv = [
                    torch.cat(
                        [
                            _slots(mine[i][j] if mine else None, self.rows, width, ref),
                            _slots(theirs[i][j] if theirs else None, other.rows, width, ref),
                        ]
                    )
                    for j in (0, 1)
                ]
                joined.append(kv)
            if not mine:
                self.cache = other.cache
            for layer, (keys, values) in zip(cast("list[DynamicLayer]", self.cache.layers), joined, strict=True):
                layer.keys, layer.values = keys, values
        self.mask = torch.cat([_left_pad(self.mask, width, dim=1), _left_pad(other.mask.to(self.device), width, dim=1)])

    def preload(self, layers: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
        """Start every row from the same cached slots, (keys, values) [1, H, S, D] per layer (a shared prompt
        prefix); the next forward appends after them."""
        for index, (keys, values) in enumerate(layers):
            self.cache.update(keys.expand(self.rows, -1, -1, -1), values.expand(self.rows, -1, -1, -1), index)
        self.mask = torch.ones(self.rows, layers[0][0].shape[2], dtype=torch.bool, device=self.device)

    def prefix(self, row: int, slots: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """The first `slots` slots of one row, per layer, for `preload` (the row must have no holes there)."""
        return [(keys[row : row + 1, :, :slots], values[row : row + 1, :, :slots]) for keys, values in self._layers()]

    def _layers(self) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """(keys, values) [B, H, S, D] per layer; empty while nothing is cached."""
        if self.width == 0:
            return []
        layers = cast("list[DynamicLayer]", self.cache.layers)
        return [(layer.keys, layer.values) for layer in layers if layer.keys is not None and layer.values is not None]

    def select(self, rows: torch.Tensor) -> None:
        """Keep only `rows` (finished sequences leave the batch)."""
        rows = rows.to(self.device)
        self.cache.batch_select_indices(rows)
        self.mask = self.mask[rows]

    def compact(self) -> None:
        """Squeeze out holes: every row becomes left-padded, the cache as short as its longest row."""
        counts = self.mask.sum(1)
        new_width = int(counts.max())
        # Order slots so live ones come last, keeping their order; take the last new_width of them.
        order = torch.argsort(self.mask.long() * (self.width + 1) + torch.arange(self.width, device=self.device), 1)
        index = order[:, self.width - new_width :]
        # transformers types `layers` as every layer kind (linear-attention, dummy); a DynamicCache() built
        # without a config replicates DynamicLayer only, and the forward that left the holes filled each one.
        for layer in cast("list[DynamicLayer]", self.cache.layers):
            assert layer.keys is not None and layer.values is not None
            gather = index[:, None, :, None].expand(-1, layer.keys.shape[1], -1, layer.keys.shape[3])
            layer.keys = torch.gather(layer.keys, 2, gather)
            layer.values = torch.gather(layer.values, 2, gather)
        self.mask = torch.gather(self.mask, 1, index)


def _left_pad(t: torch.Tensor, width: int, dim: int = 2) -> torch.Tensor:
    """Holes (zeros / False) on the left of the slot dimension up to `width` slots."""
    missing = width - t.shape[dim]
    if missing == 0:
        return t
    shape = list(t.shape)
    shape[dim] = missing
    return torch.cat([torch.zeros(shape, dtype=t.dtype, device=t.device), t], dim)


def _slots(values: torch.Tensor | None, rows: int, width: int, ref: torch.Tensor) -> torch.Tensor:
    """`rows` rows at `width` slots shaped like `ref` [B, H, S, D]: the cached values left-padded, or all holes."""
    if values is None:
        return torch.zeros(rows, ref.shape[1], width, ref.shape[3], dtype=ref.dtype, device=ref.device)
    return _left_pad(values.to(ref.device), width)
