"""The serving loop (what the Triton reference model runs): requests submitted from other threads while others
decode come out token-identical to plain greedy decoding, each with its own budget and K, the schedule's K
follows the live batch size, min_tokens holds EOS back, and a request can end itself (a stop string)."""

from __future__ import annotations

import threading

import pytest

from specdeploy.engines.reference.runtime.models import ModelPair
from specdeploy.engines.reference.runtime.serving import Emitted, InflightLoop, Request
from tests.unit.runtime.tiny import greedy, hf_greedy, noisy_copy, random_prompts, run_inflight, tiny_llama


@pytest.fixture(scope="module")
def pair():
    target = tiny_llama(0)
    return ModelPair(target, noisy_copy(target, 3, 0.3))


def test_concurrent_requests_match_plain_greedy_with_their_own_budgets_and_k(pair):
    prompts = random_prompts(6, 96, seed=4)
    budgets = [5, 12, 3, 9, 12, 7]
    reference = [hf_greedy(pair.target, [p], b)[0] for p, b in zip(prompts, budgets, strict=True)]
    schedule = {1: 4, 2: 3, 3: 2, 4: 1}
    loop = InflightLoop(pair, "draft_target", lambda b: schedule.get(b, 0), 4, 32)
    try:
        own = [None, 0, None, 6, None, 2]
        seen = run_inflight(loop, [(p, greedy(b), k) for p, b, k in zip(prompts, budgets, own, strict=True)])
    finally:
        loop.close()
    for steps, expected, k in zip(seen, reference, own, strict=True):
        assert sum((s.tokens for s in steps), []) == expected
        if k is not None:
            assert {s.k for s in steps} == {k}
        else:
            assert all(s.k == schedule.get(s.batch, 0) for s in steps)
    assert max(s.batch for steps in seen for s in steps) == 4  # never more than max_batch together
    assert seen[1][-1].drafted == 0  # draft_len 0: plain decoding for that request only


def test_min_tokens_holds_eos_back_and_a_request_can_stop_itself():
    target = tiny_llama(0)
    prompt = random_prompts(1, 96, seed=9)[0]
    free = hf_greedy(target, [prompt], 30)[0]
    end = next(i for i in range(2, 30) if free[i] not in free[:i])
    eos = free[end]  # made EOS: plain decoding ends there
    target.generation_config.eos_token_id = eos
    pair = ModelPair(target, noisy_copy(target, 3, 0.3), tokenizer=object())  # a tokenizer makes EOS count
    loop = InflightLoop(pair, "draft_target", lambda _b: 2, 2, 32)
    stopped: list[Emitted] = []
    over = threading.Event()

    def stop_after_two(step: Emitted) -> bool:
        stopped.append(step)
        if step.finished or sum(len(s.tokens) for s in stopped) >= 2:
            over.set()
            return True
        return False

    try:
        plain, held = run_inflight(loop, [(prompt, greedy(30), None), (prompt, greedy(30, min_tokens=30), None)])
        loop.submit(Request(prompt, greedy(30, min_tokens=30), stop_after_two, print))
        assert over.wait(60)
    finally:
        loop.close()
    assert sum((s.tokens for s in plain), []) == free[: end + 1]
    tokens = sum((s.tokens for s in held), [])
    assert len(tokens) == 30 and eos not in tokens
    assert sum(len(s.tokens) for s in stopped) < 30 and not stopped[-1].finished  # it left once it said so


def test_the_loop_keeps_no_per_token_timings(pair, monkeypatch):
    """A server runs for days and nothing reads the batch recorder's TTFT/ITL lists: they must not grow."""
    from specdeploy.engines.reference.runtime import serving
    from specdeploy.engines.reference.runtime.stats import Recorder

    made: list[Recorder] = []

    class Kept(Recorder):
        def __init__(self, draft_len: int) -> None:
            super().__init__(draft_len)
            made.append(self)

    monkeypatch.setattr(serving, "Recorder", Kept)
    prompts = random_prompts(4, 96, seed=5)
    loop = InflightLoop(pair, "draft_target", lambda _b: 2, 2, 32)
    try:
        run_inflight(loop, [(p, greedy(12), None) for p in prompts])
    finally:
        loop.close()
    assert made and sum(made[0].hist) > 0  # it decoded with drafts
    rec = made[0]  # at most one step's worth left: 2 rows x (K + 1) tokens
    assert len(rec.itl) <= 2 * 3 and len(rec.ttft) <= 2 and len(rec.occupancy) <= 1, (rec.itl, rec.ttft)


def test_finished_requests_leave_no_generator_behind(pair, monkeypatch):
    """Every request brings its own torch.Generator; once it is done the batch must not keep it, nor a slot for it:
    the next request reuses its index, so the batch's lists stay as long as its busiest moment."""
    from specdeploy.engines.reference.runtime import serving
    from specdeploy.engines.reference.runtime.engine import Batch

    made: list[Batch] = []

    class Kept(Batch):
        def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(serving, "Batch", Kept)
    prompts = random_prompts(10, 96, seed=6)
    specs = [greedy(6) for _ in prompts]
    loop = InflightLoop(pair, "draft_target", lambda _b: 2, 2, 32)
    try:
        seen = run_inflight(loop, [(p, s, None) for p, s in zip(prompts, specs, strict=True)])
    finally:
        loop.close()
    kept = {id(s.generator) for s in made[0].specs}
    assert not kept & {id(s.generator) for s in specs}
    assert len(made[0].prompts) <= 2 < len(prompts)  # 10 requests, at most 2 at once: 2 slots
    for prompt, steps in zip(prompts, seen, strict=True):  # a reused index carries nothing of its last request
        assert sum((e.tokens for e in steps), []) == hf_greedy(pair.target, [prompt], 6)[0]
