"""Step cost: roofline, attention tiles, MoE, TP, drafters — hand-computed checks and monotonicity."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specdeploy.perfmodel import Efficiency, forward_cost, plateau_draft_len, ridge_tokens, tile_aligned_draft_lens
from specdeploy.perfmodel.attention import attention_work
from specdeploy.perfmodel.cost import experts_touched, forward_work
from specdeploy.perfmodel.drafters import DraftContext, draft_seconds, drafter_names
from specdeploy.perfmodel.shapes import (
    DEEPSEEK_V3,
    EAGLE3_LLAMA_3_1_8B,
    LLAMA_3_1_8B,
    LLAMA_3_1_70B,
    LLAMA_3_2_1B,
    SMOLLM2_135M,
)
from specdeploy.resolve.gpus import GPUS

H200 = GPUS["h200"]


def test_h200_ridge_point() -> None:
    assert H200.ridge_point == pytest.approx(989 / 4.8, rel=1e-9)
    assert 200 < H200.ridge_point < 210


def test_ridge_tokens_near_ridge_point_for_bf16() -> None:
    # bf16: 2 bytes and 2 FLOPs per parameter per token -> the GEMM knee sits near the ridge point (efficiencies equal)
    tokens = ridge_tokens(LLAMA_3_1_8B, H200, eff=Efficiency(compute=0.8, bandwidth=0.8))
    assert 0.95 * H200.ridge_point < tokens < 1.10 * H200.ridge_point  # activation bytes push it a little up
    eff = Efficiency(compute=0.8, bandwidth=0.8)
    assert forward_cost(LLAMA_3_1_8B, H200, batch=tokens, tokens=1, context=0, eff=eff).bound == "compute"
    assert forward_cost(LLAMA_3_1_8B, H200, batch=tokens - 1, tokens=1, context=0, eff=eff).bound == "memory"


def test_llama8b_batch1_decode_bounded_by_weight_bytes() -> None:
    assert LLAMA_3_1_8B.weight_bytes() >= 16e9
    assert forward_cost(LLAMA_3_1_8B, H200, batch=1, tokens=1, context=1).total_s >= 16e9 / 4.8e12
    # at 100% bandwidth the floor is every weight but the input embedding table, which is gathered, not streamed
    streamed = LLAMA_3_1_8B.weight_bytes() - LLAMA_3_1_8B.vocab * LLAMA_3_1_8B.hidden * 2
    ideal = Efficiency(bandwidth=1.0, compute=1.0, step_overhead_s=0.0)
    assert forward_cost(LLAMA_3_1_8B, H200, batch=1, tokens=1, context=1, eff=ideal).total_s >= streamed / 4.8e12


@pytest.mark.parametrize(("model", "flat_until"), [(LLAMA_3_1_8B, 32), (LLAMA_3_1_70B, 16)])
def test_attention_plateau_and_tile_steps(model, flat_until: int) -> None:
    cost = [attention_work(model, batch=8, tokens=t, context=4096).kv_bytes for t in range(1, 3 * flat_until + 2)]
    assert len(set(cost[:flat_until])) == 1  # T <= 128/G: one tile
    assert cost[flat_until] == 2 * cost[0]  # first step at T = 128/G + 1
    assert cost[2 * flat_until] == 3 * cost[0]
    step = [
        forward_cost(model, H200, batch=64, tokens=t, context=8192).attention_s for t in (1, flat_until, flat_until + 1)
    ]
    assert step[0] == step[1] < step[2]


def test_untiled_attention_counts_the_real_rows() -> None:
    # SmolLM2: 30 layers, 3 KV heads of 64, G = 3. B = 2, T = 3, L = 100: 9 query rows per KV head, no padding
    untiled = attention_work(SMOLLM2_135M, batch=2, tokens=3, context=100, tile_rows=None)
    assert untiled.flops == 4 * 30 * 2 * 3 * 9 * 100 * 64
    assert untiled.kv_bytes == 30 * 2 * 3 * 100 * 2 * 64 * 2  # each KV head streamed once
    tiled = attention_work(SMOLLM2_135M, batch=2, tokens=3, context=100)
    assert tiled.flops == untiled.flops * 128 / 9 and tiled.kv_bytes == untiled.kv_bytes
    assert attention_work(SMOLLM2_135M, batch=2, tokens=6, context=100, tile_rows=None).flops == 2 * untiled.flops


def test_cache_overhead_is_per_cached_position_and_off_by_default() -> None:
    eff = Efficiency(cache_overhead_s=1e-6)
    for tokens in (1, 5):
        plain = forward_cost(SMOLLM2_135M, H200, batch=4, tokens=tokens, context=1000)
        copied = forward_cost(SMOLLM2_135M, H200, batch=4, tokens=tokens, context=1000, eff=eff)
        assert copied.total_s - plain.total_s == pytest.approx(4 * 1000 * 30 * 1e-6)  # B x L x layers, T-free
    assert Efficiency().cache_overhead_s == 0.0


def test_guideline_2_and_3_numbers() -> None:
    assert plateau_draft_len(4) == 31 and plateau_draft_len(8) == 15 and plateau_draft_len(16) == 7
    assert plateau_draft_len(1) == 127
    assert tile_aligned_draft_lens(4, 95) == [31, 63, 95]
    assert tile_aligned_draft_lens(8, 47) == [15, 31, 47]


def test_sliding_window_and_mla_caps() -> None:
    windowed = replace(LLAMA_3_1_8B, sliding_window=1024)
    assert (
        attention_work(windowed, batch=1, tokens=1, context=8192).kv_bytes
        == attention_work(LLAMA_3_1_8B, batch=1, tokens=1, context=1024).kv_bytes
    )
    mla = attention_work(DEEPSEEK_V3, batch=1, tokens=1, context=1000, kv_dtype_bytes=1.0)
    assert mla.kv_bytes == DEEPSEEK_V3.kv_bytes_per_token(1.0) * 1000  # the latent, not per-head K/V
    assert attention_work(DEEPSEEK_V3, batch=1, tokens=2, context=1000).tiles == 2  # 128 heads fill a tile


def test_moe_expert_reads_grow_with_tokens() -> None:
    assert experts_touched(256, 8, 1) == pytest.approx(8)
    assert experts_touched(256, 8, 10_000) == pytest.approx(256)
    small = forward_work(DEEPSEEK_V3, batch=1, tokens=1, context=0).gemm_bytes
    large = forward_work(DEEPSEEK_V3, batch=16, tokens=4, context=0).gemm_bytes
    assert large > 3 * small  # 64 tokens touch most experts


def test_tp_splits_weights_and_adds_allreduce() -> None:
    one = forward_cost(LLAMA_3_1_70B, H200, batch=8, tokens=1, context=1024)
    four = forward_cost(LLAMA_3_1_70B, H200, batch=8, tokens=1, context=1024, tp=4)
    assert one.comm_s == 0 and four.comm_s > 0
    assert four.gemm_s == pytest.approx(one.gemm_s / 4)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 256),
    st.integers(1, 64),
    st.integers(0, 32768),
    st.sampled_from(["none", "fp8", "int4_awq"]),
    st.sampled_from([LLAMA_3_1_8B, DEEPSEEK_V3]),
)
def test_cost_non_decreasing_in_b_t_l(b: int, t: int, ctx: int, quant: str, model) -> None:
    cost = lambda b, t, ctx: forward_cost(model, H200, batch=b, tokens=t, context=ctx, quantization=quant).total_s  # noqa: E731
    base = cost(b, t, ctx)
    assert cost(b + 1, t, ctx) >= base and cost(b, t + 1, ctx) >= base and cost(b, t, ctx + 100) >= base


def test_every_tabled_drafter_costs_something_sane() -> None:
    ctx = DraftContext(LLAMA_3_1_8B, None, H200, Efficiency(), context=2048)
    target = forward_cost(LLAMA_3_1_8B, H200, batch=1, tokens=1, context=2048).total_s
    assert len(drafter_names()) >= 11  # every built-in prices its drafter
    for name in drafter_names():
        assert 0 <= draft_seconds(name, ctx, 1, 4) < 4 * target, name
        assert draft_seconds(name, ctx, 1, 0) == 0
    assert draft_seconds("ngram", ctx, 1, 4) == 0
    eagle = draft_seconds("eagle3", replace(ctx, draft=EAGLE3_LLAMA_3_1_8B), 1, 1)
    assert 0.01 * target < eagle < 0.15 * target  # one layer + a 32k head
    with_draft = replace(ctx, draft=LLAMA_3_2_1B)
    assert draft_seconds("draft_target", with_draft, 1, 3) == pytest.approx(
        3 * forward_cost(LLAMA_3_2_1B, H200, batch=1, tokens=1, context=2048).total_s
    )


def test_unknown_mechanism_uses_generic_fallback() -> None:
    ctx = DraftContext(LLAMA_3_1_8B, None, H200, Efficiency(), context=2048)
    target = forward_cost(LLAMA_3_1_8B, H200, batch=1, tokens=1, context=2048).total_s
    assert draft_seconds("third-party-drafter", ctx, 1, 2) == pytest.approx(2 * 0.1 * target)
