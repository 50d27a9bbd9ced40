"""Greedy speculation must reproduce plain greedy decoding token for token (the lossless oracle)."""

from __future__ import annotations

import pytest
import torch

from specdeploy.engines.reference.runtime import engine, generate
from specdeploy.engines.reference.runtime.drafters import make_drafter
from specdeploy.engines.reference.runtime.engine import Batch, RowSpec, run_batched
from specdeploy.engines.reference.runtime.models import ModelPair
from specdeploy.engines.reference.runtime.stats import Recorder
from tests.unit.runtime.tiny import MAX_NEW, hf_greedy, noisy_copy, random_prompts, repetitive_prompts, tiny_llama


@pytest.fixture(scope="module")
def prompts():
    return random_prompts(12, 96, seed=1) + repetitive_prompts(10, 96, seed=2)


def test_plain_runtime_matches_transformers_generate(target, prompts, reference):
    for concurrency in (1, 3):
        out, stats = generate(ModelPair(target), prompts, "none", 0, concurrency, MAX_NEW)
        assert out == reference
        assert stats.generated_tokens == len(prompts) * MAX_NEW


@pytest.mark.parametrize("drafter_kind", ["random", "noisy", "same"])
@pytest.mark.parametrize("concurrency", [1, 3])
def test_draft_target_greedy_is_lossless(target, prompts, reference, drafter_kind, concurrency):
    drafter = {
        "random": lambda: tiny_llama(7, layers=1),
        "noisy": lambda: noisy_copy(target, 3, 0.3),
        "same": lambda: target,
    }[drafter_kind]()
    pair = ModelPair(target, drafter)
    for k in range(1, 9):
        out, stats = generate(pair, prompts, "draft_target", k, concurrency, MAX_NEW)
        assert out == reference, f"K={k}"
        if drafter_kind == "same":  # every drafted token must pass: catches a stale drafter cache
            assert stats.accepted_tokens == stats.drafted_tokens > 0
    if drafter_kind == "noisy":  # partial acceptance really happened, so rollback was exercised
        assert 0.0 < stats.accept_hist[0] < 1.0 and stats.accepted_tokens < stats.drafted_tokens


@pytest.mark.parametrize("concurrency", [1, 3])
def test_ngram_greedy_is_lossless(target, prompts, reference, concurrency):
    accepted = 0
    for k in range(1, 9):
        for match in (1, 3):
            out, stats = generate(ModelPair(target), prompts, "ngram", k, concurrency, MAX_NEW, ngram_match=match)
            assert out == reference, f"K={k} match={match}"
            accepted += stats.accepted_tokens
    assert accepted > 0


def test_stats_are_consistent(target, prompts):
    out, stats = generate(ModelPair(target, noisy_copy(target, 3, 0.3)), prompts, "draft_target", 4, 3, MAX_NEW)
    assert len(stats.accept_hist) == 5 and abs(sum(stats.accept_hist) - 1) < 1e-9
    assert stats.generated_tokens == sum(map(len, out))
    # every token after the first comes from a verification step: emitted = accepted + one per step
    assert stats.generated_tokens - len(prompts) == stats.accepted_tokens + stats.seq_steps
    assert stats.acceptance_length == pytest.approx((stats.accepted_tokens + stats.seq_steps) / stats.seq_steps)
    assert stats.ttft_ms["p50"] > 0 and stats.itl_ms["p99"] >= stats.itl_ms["p50"] > 0
    assert set(stats.to_dict()) >= {"accept_hist", "acceptance_length", "tokens_per_s", "ttft_ms", "itl_ms"}


def test_tpot_is_per_request_and_itl_per_delivery(target, prompts):
    """TPOT: one value per request, (last - first token) / (tokens - 1). ITL: one gap per step that gave a
    sequence tokens, however many it gave (a speculative step gives up to K + 1): not one per token."""
    rec = Recorder(4)
    pair = ModelPair(target, noisy_copy(target, 3, 0.3))
    out = run_batched(pair, prompts, "draft_target", 4, 3, MAX_NEW, 0.0, torch.Generator(), 3, rec)
    assert all(len(o) == MAX_NEW for o in out) and len(rec.tpot) == len(prompts)
    assert len(rec.itl) == sum(rec.hist) < len(prompts) * (MAX_NEW - 1)  # drafts accepted: fewer deliveries
    # a sequence's gaps add up to its first-to-last-token time, which is its TPOT x (tokens - 1)
    assert sum(rec.itl) == pytest.approx((MAX_NEW - 1) * sum(rec.tpot))
    stats = rec.finish(
        1.0, mechanism="draft_target", draft_len=4, concurrency=3, temperature=0.0, num_prompts=len(prompts)
    )
    assert stats.itl_ms["mean"] > stats.tpot_ms["mean"] > 0


def test_a_finished_row_is_replaced_at_once(target, prompts, reference):
    """In-flight batching: while prompts queue, every step runs `concurrency` rows; static waves would let the
    batch shrink as rows of a wave finish early and then jump back up for the next wave."""
    rec = Recorder(4)
    pair = ModelPair(target, noisy_copy(target, 3, 0.3))
    out = run_batched(pair, prompts, "draft_target", 4, 3, MAX_NEW, 0.0, torch.Generator(), 3, rec)
    assert out == reference
    occupancy = rec.occupancy
    drain = next(i for i, n in enumerate(occupancy) if n < 3)
    assert set(occupancy[:drain]) == {3}
    assert occupancy[drain:] == sorted(occupancy[drain:], reverse=True)  # only the final drain shrinks
    assert len(set(occupancy[drain:])) == 2  # rows did finish at different steps: refills were exercised
    stats = rec.finish(
        1.0, mechanism="draft_target", draft_len=4, concurrency=3, temperature=0.0, num_prompts=len(prompts)
    )
    assert stats.mean_batch == pytest.approx(sum(occupancy) / len(occupancy)) and stats.mean_batch > 2.5


@pytest.mark.parametrize("mechanism", ["none", "draft_target", "eagle3"])
def test_one_admit_of_prompts_of_different_lengths_matches_generate(target, mechanism):
    """Several requests joining at one step (a wave of a server's clients) are prefilled in one `admit`:
    equal lengths share a forward, others get their own, and all join a running batch with holes."""
    from tests.unit.runtime.tiny import tiny_head

    first = [random_prompts(1, 96, seed=s, low=n, high=n + 1)[0] for s, n in enumerate([3, 11, 20, 11, 6])]
    later = [random_prompts(1, 96, seed=9 + s, low=n, high=n + 1)[0] for s, n in enumerate([2, 30, 2])]
    reference = hf_greedy(target, first + later, MAX_NEW)
    drafter = {"none": None, "draft_target": noisy_copy(target, 3, 0.3), "eagle3": tiny_head(target)}[mechanism]
    pair = ModelPair(target, drafter)
    drafter_state = make_drafter(mechanism, pair, 0.0, torch.Generator(), 3)
    batch = Batch(pair, drafter_state, Recorder(3))
    spec = RowSpec(MAX_NEW, 0.0, torch.Generator())
    try:
        with torch.inference_mode():
            batch.admit([batch.add(p, spec) for p in first])
            for _ in range(3):
                batch.step(3)
            batch.admit([batch.add(p, spec) for p in later])
            while batch.active:
                batch.step(3)
    finally:
        drafter_state.close()  # an EAGLE drafter unhooks the shared target
    assert batch.outputs == reference


@pytest.mark.parametrize("decode", ["eager", "static"])
@pytest.mark.parametrize("mechanism", ["none", "draft_target", "eagle3"])
def test_prompts_sharing_a_start_reuse_its_cache_and_match_generate(target, mechanism, decode, monkeypatch):
    """Prompts that start like the first one prefilled (a chat template's system turn) take those slots from
    its cache: the same prompt again, a longer and a shorter one; one that differs early is prefilled whole and
    becomes the donor of the prompts after it. The static-shape cache (static_step.py) takes them the same way."""
    from tests.unit.runtime.tiny import tiny_head

    start = random_prompts(1, 96, seed=20, low=20, high=21)[0]
    tails = random_prompts(4, 96, seed=21, low=1, high=9)
    prompts = [
        start + tails[0],
        start + tails[1],
        start + tails[0],
        start[:18],
        start[:5] + tails[2] + start,
        start + tails[3] + tails[1],
    ]
    prompts.append(prompts[4] + tails[3])
    reference = hf_greedy(target, prompts, MAX_NEW)
    drafter = {"none": None, "draft_target": noisy_copy(target, 3, 0.3), "eagle3": tiny_head(target)}[mechanism]
    pair = ModelPair(target, drafter, decode=decode)
    batch, drafts = decode_sharing_a_start(pair, mechanism, prompts)
    assert batch.outputs == reference
    monkeypatch.setattr(engine, "REUSE_MIN", 10**6)  # nothing reused: the drafter must have drafted the same
    unshared, unshared_drafts = decode_sharing_a_start(pair, mechanism, prompts, reuse=False)
    assert (batch.drafted, batch.accepted) == (unshared.drafted, unshared.accepted)
    assert drafts == unshared_drafts  # the chains themselves: an untrained head accepts too little to tell by counts


def decode_sharing_a_start(
    pair: ModelPair, mechanism: str, prompts: list[list[int]], reuse: bool = True
) -> tuple[Batch, list]:
    """The batch after decoding every prompt, and every chain of drafts proposed (none for plain decoding)."""
    state = make_drafter(mechanism, pair, 0.0, torch.Generator(), 3)
    drafts: list = []
    if hasattr(state, "chain"):
        chain = state.chain
        state.chain = lambda *a: (drafts.append((proposed := chain(*a))[0]), proposed)[1]  # type: ignore[attr-defined]
    batch = Batch(pair, state, Recorder(3))
    spec = RowSpec(MAX_NEW, 0.0, torch.Generator())
    try:
        with torch.inference_mode():
            batch.admit([batch.add(prompts[0], spec)])
            batch.step(2)
            if reuse:
                assert batch._reusable(prompts[1]) == 20 and batch._reusable(prompts[2]) == len(prompts[2]) - 1
                assert batch._reusable(prompts[3]) == 17 and batch._reusable(prompts[4]) == 0
            batch.admit([batch.add(p, spec) for p in prompts[1:-1]])
            batch.step(2)
            if reuse:
                assert batch.donor is not None and batch.donor.tokens == prompts[4]
                assert batch._reusable(prompts[-1]) == len(prompts[4])
            batch.admit([batch.add(prompts[-1], spec)])
            while batch.active:
                batch.step(2)
    finally:
        state.close()
    return batch, drafts
