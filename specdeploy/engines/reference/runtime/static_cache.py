"""A static-shape KV cache, so a decode step can be captured once per shape (CUDA graphs) and replayed.

cache.py's `KVState` grows a `DynamicCache` by concatenation and marks rejected slots as holes: every step has
new shapes. Here every layer owns preallocated K/V buffers [rows, kv_heads, capacity, head_dim]; a row's cached
tokens sit compact at positions 0..length-1, a step writes its tokens at per-row positions with `scatter_`, and
rolling back after verification only lowers the row's length (rejected slots are overwritten later). Attention
reads the whole buffer under a 4-D additive mask built from the positions, so no shape depends on the data.

`StaticKVState` keeps `KVState`'s interface (forward / truncate / extend / select, `width`, `rows`) in KVState's
slot coordinates, so the engine and the drafters drive either. Its bookkeeping (lengths, which slot each cached
position came from) lives on the CPU: the step never reads a device tensor back (no `.item()`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from specdeploy.engines.reference.runtime.cache import KVState


class StaticBuffers:
    """Per-layer K/V buffers and the positions the step in flight writes: what the model's attention calls.

    transformers' attention calls `update(key_states, value_states, layer_idx)` on the object it was handed as its
    cache (5.17: `past_key_values.update(k, v, idx)`; 5.24: `cache.update(k, v, idx, kwargs=...)`); with a 4-D mask
    and position ids given, neither release asks the cache anything else."""

    def __init__(self, model: Any, rows: int, capacity: int) -> None:
        config = model.config
        heads = int(config.num_key_value_heads)
        head_dim = int(getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads)
        param = next(model.parameters())
        shape = (rows, heads, capacity, head_dim)
        self.keys = [
            torch.zeros(shape, dtype=param.dtype, device=param.device) for _ in range(config.num_hidden_layers)
        ]
        self.values = [torch.zeros_like(k) for k in self.keys]
        self.positions = torch.zeros(0, 0, dtype=torch.long, device=param.device)  # [B, T], set by the step
        self.updates = 0  # layers written by the last eager forward: a model that ignored its cache writes none
        self.counting = False  # count them (not under torch.compile: a changing count would recompile every step)

    @property
    def rows(self) -> int:
        return int(self.keys[0].shape[0])

    @property
    def capacity(self) -> int:
        return int(self.keys[0].shape[2])

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, layer_idx: int, *_: Any, **__: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Write this step's K/V [B, H, T, D] at `positions`; return the layer's whole buffers for B rows."""
        batch = key_states.shape[0]
        index = self.positions[:, None, :, None].expand(-1, key_states.shape[1], -1, key_states.shape[3])
        keys, values = self.keys[layer_idx][:batch], self.values[layer_idx][:batch]
        keys.scatter_(2, index, key_states)
        values.scatter_(2, index, value_states)
        if self.counting:
            self.updates += 1
        return keys, values

    def get_seq_length(self, layer_idx: int = 0) -> int:  # noqa: ARG002
        return self.capacity

    def grown(self, model: Any, rows: int, capacity: int) -> StaticBuffers:
        """Buffers of at least this size holding these ones' contents (self when they are big enough)."""
        if rows <= self.rows and capacity <= self.capacity:
            return self
        bigger = StaticBuffers(model, max(rows, self.rows), max(capacity, self.capacity))
        for old, new in zip(self.keys + self.values, bigger.keys + bigger.values, strict=True):
            new[: old.shape[0], :, : old.shape[2]] = old
        return bigger


def write_positions(valid: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Where each token of a [B, T] chunk goes: live tokens right after the row's cached ones, in order; holes
    after those (distinct, beyond the row's new length, so never attended and overwritten later)."""
    count = valid.sum(1, keepdim=True)
    rank = torch.where(valid, valid.long().cumsum(1) - 1, count + (~valid).long().cumsum(1) - 1)
    return lengths[:, None] + rank


class StaticKVState:
    """`KVState`'s interface over a model's `StaticRunner`: rows compact, per-row lengths, rollback = a shorter row."""

    def __init__(self, model: Any, batch: int, runner: Any) -> None:  # a static_step.StaticRunner
        self.model, self.runner = model, runner
        self.device = runner.device
        runner.claim(self)
        self.width = 0  # KVState's slot coordinate: every forward appends its chunk's width
        self.lengths = torch.zeros(batch, dtype=torch.long)
        self.slots = torch.zeros(batch, runner.capacity, dtype=torch.long)  # [b, p]: the slot position p came from

    @property
    def rows(self) -> int:
        return int(self.lengths.shape[0])

    def forward(
        self,
        tokens: torch.Tensor | None,
        valid: torch.Tensor,
        last_only: bool = False,
        embeds: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """KVState.forward: append a [B, w] chunk (holes where `valid` is False); logits [B, w or 1, V]."""
        valid = valid.cpu().bool()
        logits = self.runner.step(self, tokens, embeds, valid)
        positions = write_positions(valid, self.lengths)
        self._fit(self.runner.capacity)
        chunk = valid.shape[1]
        self.slots.scatter_(1, positions, (self.width + torch.arange(chunk)).expand_as(positions).contiguous())
        self.lengths = self.lengths + valid.sum(1)
        self.width += chunk
        return logits[:, -1:] if last_only else logits

    def truncate(self, keep: torch.Tensor) -> None:
        """KVState.truncate: row b keeps the cached tokens from slots before keep[b]; the rest is overwritten later."""
        cached = torch.arange(self.slots.shape[1])[None, :] < self.lengths[:, None]
        self.lengths = ((self.slots < keep.cpu()[:, None]) & cached).sum(1)

    def extend(self, other: KVState) -> None:
        """Append a dynamic `KVState`'s rows (a prefill): their live slots, squeezed to the front of new rows."""
        mask = other.mask.cpu()
        width = other.width if self.rows == 0 else max(self.width, other.width)
        counts = mask.sum(1)
        order = torch.argsort((~mask).long(), dim=1, stable=True)  # live slots first, in order
        longest = int(counts.max()) if counts.numel() else 0
        start = self.rows
        self.runner.reserve(start + mask.shape[0], longest)
        buffers = self.runner.buffers
        for i, (keys, values) in enumerate(other._layers()):
            index = order[:, None, :longest, None].to(keys.device).expand(-1, keys.shape[1], -1, keys.shape[3])
            buffers.keys[i][start : start + len(mask), :, :longest] = keys.gather(2, index).to(buffers.keys[i])
            buffers.values[i][start : start + len(mask), :, :longest] = values.gather(2, index).to(buffers.values[i])
        self._fit(self.runner.capacity)
        new = torch.zeros(len(mask), self.slots.shape[1], dtype=torch.long)
        new[:, : order.shape[1]] = order + (width - other.width)  # KVState left-pads the narrower side
        self.slots = torch.cat([self.slots + (width - self.width), new])
        self.lengths = torch.cat([self.lengths, counts])
        self.width = width

    def select(self, rows: torch.Tensor) -> None:
        """Keep only `rows` (finished sequences leave): their buffer rows move to the front."""
        rows = rows.cpu()
        self.runner.keep_rows(rows)
        self.lengths, self.slots = self.lengths[rows], self.slots[rows]

    def _fit(self, capacity: int) -> None:
        """Widen the slot table when the runner's buffers grew."""
        if capacity > self.slots.shape[1]:
            self.slots = torch.cat([self.slots, self.slots.new_zeros(self.rows, capacity - self.slots.shape[1])], 1)
