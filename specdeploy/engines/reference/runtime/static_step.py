"""Decode modes and the static step: one forward shape per (batch bucket, tokens bucket), eager or captured.

- `eager` (default): cache.py's dynamic `KVState`, as before.
- `static`: the static cache (static_cache.py) and this padded step, run eagerly (any device; what the CPU tests
  prove lossless).
- `graphs`: the same step captured once per bucket in a `torch.cuda.CUDAGraph` (warm-up on a side stream, static
  input and output tensors) and replayed. CUDA only.
- `compile`: the same step through `torch.compile(mode="reduce-overhead")` (its own CUDA graphs). CUDA only.

A chunk of B rows × w tokens is padded to the next powers of two: padding rows and columns are holes, written past
every row's cached tokens and never attended. A model's runner (buffers, captured graphs) outlives one `generate`
call, so graphs are captured once per bucket and reused; it serves one state at a time. It holds its model and that
state weakly: the registry is keyed by the model, and a strong reference back would keep every model ever decoded
in a static mode alive, with its buffers and graphs.
"""

from __future__ import annotations

import os
import weakref
from typing import Any

import torch

from specdeploy.engines.reference.runtime.stack import cache_keyword
from specdeploy.engines.reference.runtime.static_cache import StaticBuffers, StaticKVState, write_positions
from specdeploy.errors import MissingDependency, UsageError

MODES = ("eager", "static", "graphs", "compile")
CUDA_ONLY = ("graphs", "compile")
ENV = "SPECDEPLOY_DECODE"
MIN_CAPACITY = 256
MAX_CAPTURED_TOKENS = 32  # wider chunks (a drafter fed a whole prompt) run the static step uncaptured
RECOMPILE_LIMIT = 64  # buckets: batch 1..16 x tokens 1..16 x ids/embeddings, for the target and a drafter
_RUNNERS: weakref.WeakKeyDictionary[Any, dict[str, StaticRunner]] = weakref.WeakKeyDictionary()


def decode_mode(mode: str | None, device: str) -> str:
    """The decode mode asked for (else $SPECDEPLOY_DECODE, else eager), refused where it cannot run."""
    mode = mode or os.environ.get(ENV) or "eager"
    if mode not in MODES:
        raise UsageError(f"unknown decode mode {mode!r}", hint=f"choose one of {', '.join(MODES)} (${ENV})")
    if mode in CUDA_ONLY and not str(device).startswith("cuda"):
        raise UsageError(
            f"decode mode {mode!r} captures CUDA graphs and needs a CUDA device; this model is on {device}",
            hint=f"{ENV}=static runs the same static step without capture",
        )
    return mode


def new_state(model: Any, batch: int, mode: str, role: str = "target") -> Any:
    """A KV state for `model` in this decode mode: cache.py's `KVState`, or a `StaticKVState` on the model's runner
    for this role (a model may be its own drafter: two runners, two sets of buffers)."""
    if mode == "eager":
        from specdeploy.engines.reference.runtime.cache import KVState

        return KVState(model, batch)
    runners = _RUNNERS.setdefault(model, {})
    if role not in runners or runners[role].mode != mode:
        runners[role] = StaticRunner(model, mode)
    return StaticKVState(model, batch, runners[role])


def bucket(n: int) -> int:
    """The shape a size runs at: the next power of two (1, 2, 4, ...)."""
    return 1 << max(n - 1, 0).bit_length()


class StaticRunner:
    """One model's static buffers and its padded step per bucket: eager, CUDA-graph replay or compiled."""

    compile_options: dict[str, Any] = {"mode": "reduce-overhead", "dynamic": False}

    def __init__(self, model: Any, mode: str) -> None:
        self._model, self.mode = weakref.ref(model), mode
        self.device = next(model.parameters()).device
        decode_mode(mode, self.device.type)
        self.keyword = cache_keyword(model)
        self.buffers = self._adopt(StaticBuffers(model, 1, MIN_CAPACITY))
        self.graphs: dict[tuple[int, int, bool], Any] = {}
        self.compiled: Any = None
        self._owner: weakref.ref[StaticKVState] | None = None
        self.tapped: set[int] = set()  # modules with forward hooks when the graphs were captured (graphs.py)
        self.hooks_checked = False  # since the last claim (a new batch's drafter may tap other modules)

    @property
    def model(self) -> Any:
        model = self._model()
        assert model is not None, "the registry drops a runner with its model"
        return model

    @property
    def owner(self) -> StaticKVState | None:
        return self._owner() if self._owner is not None else None

    @property
    def capacity(self) -> int:
        return self.buffers.capacity

    def claim(self, state: StaticKVState) -> None:
        """The state that drives the buffers from now on (a new batch: the previous one is over)."""
        self._owner, self.hooks_checked = weakref.ref(state), False

    def check_filled(self) -> None:
        """After an eager forward: every layer wrote its K/V (a model that ignores its cache keyword writes none)."""
        self.buffers.counting = False
        layers = len(self.buffers.keys)
        if self.buffers.updates != layers:
            raise MissingDependency(
                f"the model wrote its K/V in {self.buffers.updates} of {layers} layers: this "
                f"transformers ignores `{self.keyword}=`"
            )

    def reserve(self, rows: int, capacity: int) -> None:
        """Buffers for `rows` rows and `capacity` positions; growing them drops the graphs captured on the old ones."""
        grown = self.buffers.grown(self.model, bucket(rows), bucket(max(capacity, MIN_CAPACITY)))
        if grown is not self.buffers:
            self.buffers, self.graphs, self.compiled = self._adopt(grown), {}, None

    def _adopt(self, buffers: StaticBuffers) -> StaticBuffers:
        """torch.compile's CUDA graphs skip a graph that mutates an input unless its address is marked static (as
        transformers' own StaticLayer marks its buffers: cache_utils.py, transformers 5.24)."""
        if self.mode == "compile":
            for tensor in buffers.keys + buffers.values:
                torch._dynamo.mark_static_address(tensor)
        return buffers

    def keep_rows(self, rows: torch.Tensor) -> None:
        """Move the kept rows to the front in place: captured graphs read these very buffers."""
        index = rows.to(self.device)
        for buf in self.buffers.keys + self.buffers.values:
            buf[: len(rows)] = buf[index]

    def step(
        self, state: StaticKVState, tokens: torch.Tensor | None, embeds: torch.Tensor | None, valid: torch.Tensor
    ) -> torch.Tensor:
        """Logits [B, w, V] of a chunk (token ids or input embeddings), run at its bucket's padded shape."""
        if state is not self.owner:
            raise RuntimeError("a static KV state whose runner another batch has claimed since")
        rows, width = valid.shape
        padded_rows, padded_width = bucket(rows), bucket(width)
        lengths = torch.zeros(padded_rows, dtype=torch.long)
        lengths[:rows] = state.lengths
        self.reserve(padded_rows, int(lengths.max()) + padded_width)
        mask = torch.zeros(padded_rows, padded_width, dtype=torch.bool)
        mask[:rows, :width] = valid
        inputs = {"positions": write_positions(mask, lengths)}
        if embeds is None:
            assert tokens is not None
            inputs["tokens"] = torch.zeros(padded_rows, padded_width, dtype=torch.long)
            inputs["tokens"][:rows, :width] = tokens
        else:
            inputs["embeds"] = embeds.new_zeros(padded_rows, padded_width, embeds.shape[-1])
            inputs["embeds"][:rows, :width] = embeds
        inputs = {name: t.to(self.device) for name, t in inputs.items()}
        if self.mode == "static" or padded_width > MAX_CAPTURED_TOKENS:  # an EAGLE head's first feed: a prefill
            self.buffers.updates, self.buffers.counting = 0, True
            logits = self.forward(**inputs)
            self.check_filled()
        elif self.mode == "graphs":
            from specdeploy.engines.reference.runtime.graphs import replay

            logits = replay(self, (padded_rows, padded_width, embeds is None), inputs)
        else:
            logits = self._compiled(inputs)
        return logits[:rows, :width]

    def forward(
        self, positions: torch.Tensor, tokens: torch.Tensor | None = None, embeds: torch.Tensor | None = None
    ) -> torch.Tensor:
        """The static-shape forward: every tensor's shape is fixed by the bucket and the buffers' capacity."""
        buffers = self.buffers
        buffers.positions = positions
        dtype = buffers.keys[0].dtype
        slots = torch.arange(buffers.capacity, device=positions.device)
        visible = slots[None, None, None, :] <= positions[:, None, :, None]  # own slot and every earlier one
        bias = torch.zeros(visible.shape, dtype=dtype, device=positions.device)
        bias.masked_fill_(~visible, torch.finfo(dtype).min)
        out = self.model(
            input_ids=tokens,
            inputs_embeds=embeds,
            attention_mask=bias,
            position_ids=positions,
            use_cache=True,
            logits_to_keep=0,
            **{self.keyword: buffers},
        )
        return out.logits

    def _compiled(self, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        if self.compiled is None:
            self.compiled = self.compile()
        torch.compiler.cudagraph_mark_step_begin()
        return self.compiled(**inputs).clone()  # its graph's output is overwritten by the next replay

    def compile(self) -> Any:
        """One compiled graph per bucket and model (target and drafter share this code): more than dynamo's default
        of 8 recompilations, past which it would fall back to eager without a word."""
        config = torch._dynamo.config
        name = "recompile_limit" if hasattr(config, "recompile_limit") else "cache_size_limit"  # older torch's name
        setattr(config, name, max(int(getattr(config, name)), RECOMPILE_LIMIT))
        return torch.compile(self.forward, **self.compile_options)
