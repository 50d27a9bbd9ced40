"""Attention work of one forward: KV bytes streamed and FLOPs, with the 128-row query tile (guidelines 2 and 3).

Hypothesis (docs/design/draft-length.md §2, no public source): the decode attention kernel processes the G x T query
rows that share one KV head in tiles of 128 rows, and each tile streams that head's KV cache once. So the cost is
flat while G x T <= 128 (draft tokens ride in padding up to D = 128/G - 1) and steps up at every tile boundary.
A kernel without query tiles (`tile_rows=None`, the CPU SDPA kernel) does the FLOPs of the real G x T rows and
streams each KV head once.

`gqa_packed=False` models torch SDPA's flash path, the H200 grid's proxy: flash-attention packs the G query heads
of a KV head into one tile only when the query length is 1 (`seqlenq_ngroups_swapped = seqlen_q == 1 && ...`,
Dao-AILab/flash-attention csrc/flash_attn/flash_api.cpp @ 765fbd92, mha_fwd); at T > 1 every query head streams
its KV head, so the KV bytes are read G times. Serving engines' decode kernels (TRT-LLM XQA, FlashInfer) pack the
group for T > 1 too, so the proxy term is off for them.
"""

from __future__ import annotations

from dataclasses import dataclass

from specdeploy.resolve.model_spec import ModelSpec

TILE_ROWS = 128
"""Query rows per attention tile (the guideline's figure; a calibration point, not a law)."""


@dataclass(frozen=True)
class AttentionWork:
    flops: float
    kv_bytes: float
    tiles: int
    """Query tiles per KV head (1 while G x T <= 128; 1 without tiling)."""


def query_groups(model: ModelSpec, tp: int = 1) -> int:
    """Query rows per KV head per token: G for GQA (TP leaves it unchanged), a GPU's heads for MLA (one latent)."""
    return max(1, model.heads // tp) if model.is_mla else model.group_size


def _rows(group: int, tokens: int, tile_rows: int | None) -> tuple[int, int]:
    """(tiles, query rows computed): rows padded to whole tiles, or the real rows when untiled."""
    if tile_rows is None:
        return 1, group * tokens
    n = -(-group * tokens // tile_rows)
    return n, n * tile_rows


def plateau_draft_len(group: int) -> int:
    """Guideline 2: D = 128/G - 1, the longest draft whose G x (D + 1) rows fit one tile."""
    return max(0, TILE_ROWS // group - 1)


def tile_aligned_draft_lens(group: int, k_max: int) -> list[int]:
    """Guideline 3: draft lengths D with G x (D + 1) a multiple of 128, up to k_max."""
    step = max(1, TILE_ROWS // group)
    return [m * step - 1 for m in range(1, k_max // step + 2) if 0 < m * step - 1 <= k_max]


def attended_length(model: ModelSpec, context: int) -> int:
    """KV positions each query reads; a sliding window caps it (applied to every layer, an upper bound for
    models that mix global and windowed layers)."""
    return min(context, model.sliding_window) if model.sliding_window else context


def attention_work(
    model: ModelSpec,
    *,
    batch: int,
    tokens: int,
    context: int,
    tp: int = 1,
    kv_dtype_bytes: float = 2.0,
    tile_rows: int | None = TILE_ROWS,
    gqa_packed: bool = True,
) -> AttentionWork:
    """Work on one GPU of a TP group for B sequences, T new tokens each, over `context` cached positions."""
    length = attended_length(model, context)
    if model.is_mla:
        heads = max(1, model.heads // tp)
        n, rows = _rows(heads, tokens, tile_rows)
        latent = model.mla_kv_lora_rank + model.mla_rope_dim
        flops = 2.0 * model.layers * batch * rows * length * (latent + model.mla_kv_lora_rank)
        kv = model.layers * batch * length * latent * kv_dtype_bytes * n  # the latent is replicated across TP
        return AttentionWork(flops, kv, n)
    kv_heads = max(1, model.kv_heads // tp)
    n, rows = _rows(model.group_size, tokens, tile_rows)
    flops = 4.0 * model.layers * batch * kv_heads * rows * length * model.head_dim
    reads = n
    if not gqa_packed and tokens > 1:  # each of the G query heads streams the KV once per tile of its T rows
        reads = model.group_size * (-(-tokens // tile_rows) if tile_rows else 1)
    kv = model.layers * batch * kv_heads * length * 2 * model.head_dim * kv_dtype_bytes * reads
    return AttentionWork(flops, kv, n)
