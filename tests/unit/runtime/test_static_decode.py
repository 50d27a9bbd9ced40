"""The static decode path (static_cache.py, static_step.py) decodes exactly what the dynamic one does.

Greedy output equals transformers' own `generate`, speculative runs accept exactly what the eager runtime
accepts (same drafts: the drafters' static caches roll back right), at batch buckets 1, 2 and 4 with padding
rows, rows joining and leaving. CUDA-graph capture cannot run on a CPU: it is refused there with a clear error.
"""

from __future__ import annotations

import pytest
import torch

from specdeploy.engines.reference.runtime import generate, static_step
from specdeploy.engines.reference.runtime.cache import KVState
from specdeploy.engines.reference.runtime.drafters import right_aligned
from specdeploy.engines.reference.runtime.models import ModelPair
from specdeploy.engines.reference.runtime.static_step import bucket, new_state
from specdeploy.errors import UsageError
from tests.unit.runtime.tiny import (
    MAX_NEW,
    drafting,
    noisy_copy,
    random_prompts,
    repetitive_prompts,
    tiny_head,
    tiny_llama,
)


@pytest.fixture(scope="module")
def prompts():
    return random_prompts(7, 96, seed=1) + repetitive_prompts(5, 96, seed=2)  # 2..23 tokens each


@pytest.mark.parametrize("concurrency", [1, 2, 3])  # buckets 1, 2 and 4 (3 rows + a padding row), then the drain
def test_static_plain_decoding_matches_transformers_generate(target, prompts, reference, concurrency):
    out, stats = generate(ModelPair(target, decode="static"), prompts, "none", 0, concurrency, MAX_NEW)
    assert out == reference
    assert stats.generated_tokens == len(prompts) * MAX_NEW


@pytest.mark.parametrize("concurrency", [1, 3])
@pytest.mark.parametrize("mechanism", ["draft_target", "eagle3"])
def test_static_speculation_drafts_exactly_as_eager(target, prompts, reference, mechanism, concurrency, monkeypatch):
    """Same drafts at every step (the drafters' static caches and the EAGLE head's padded hidden states are right),
    so the same acceptance; output equal to transformers' `generate`."""
    drafter = noisy_copy(target, 3, 0.3) if mechanism == "draft_target" else tiny_head(target)
    eager, static = ModelPair(target, drafter), ModelPair(target, drafter, decode="static")
    for k in range(1, 5):
        out, stats, drafts = drafting(static, monkeypatch, prompts, mechanism, k, concurrency, MAX_NEW)
        assert out == reference, f"K={k}"
        _, expected, expected_drafts = drafting(eager, monkeypatch, prompts, mechanism, k, concurrency, MAX_NEW)
        assert drafts == expected_drafts, f"K={k}: the static drafter drafted differently"
        assert stats.accept_hist == expected.accept_hist and stats.steps == expected.steps
    if mechanism == "draft_target":  # partial acceptance really happened: rows rolled back by different amounts
        assert 0.0 < stats.accept_hist[0] < 1.0 and stats.accepted_tokens < stats.drafted_tokens


def test_a_static_drafter_identical_to_the_target_is_always_accepted(target, prompts, reference):
    """A stale or misplaced slot in the drafter's static cache would make it disagree with the target."""
    pair = ModelPair(target, target, decode="static")
    for k in (1, 3, 4):
        out, stats = generate(pair, prompts, "draft_target", k, 3, MAX_NEW)
        assert out == reference
        assert stats.accepted_tokens == stats.drafted_tokens > 0


@pytest.mark.parametrize("mode", ["graphs", "compile"])
def test_capture_modes_are_refused_on_a_cpu(target, mode, monkeypatch):
    with pytest.raises(UsageError, match=f"decode mode '{mode}' captures CUDA graphs and needs a CUDA device"):
        ModelPair(target, decode=mode)
    monkeypatch.setenv("SPECDEPLOY_DECODE", mode)
    with pytest.raises(UsageError, match="needs a CUDA device"):
        ModelPair(target)
    from specdeploy.engines.reference.runtime import load_pair

    with pytest.raises(UsageError, match="needs a CUDA device"):  # before any model is read
        load_pair("/nonexistent/model", device="cpu")


def test_the_default_stays_eager(target, monkeypatch):
    monkeypatch.delenv("SPECDEPLOY_DECODE", raising=False)
    pair = ModelPair(target)
    assert pair.decode == "eager"
    assert type(new_state(target, 0, pair.decode)) is KVState
    with pytest.raises(UsageError, match="unknown decode mode 'fast'"):
        ModelPair(target, decode="fast")


def test_buckets_are_powers_of_two():
    assert [bucket(n) for n in (0, 1, 2, 3, 4, 5, 8, 9, 33)] == [1, 1, 2, 4, 4, 8, 8, 16, 64]


def fresh_logits(model, history: list[int]) -> torch.Tensor:
    return model(torch.tensor([history])).logits[0, -1]


@torch.no_grad()
def test_padding_rollback_growth_join_and_leave_keep_logits(monkeypatch):
    """Every KVState operation the engine uses, on a static state with tiny buffers (so they grow mid-run): each
    row's logits equal a fresh forward over its history, whatever the padding rows and columns did."""
    monkeypatch.setattr(static_step, "MIN_CAPACITY", 8)
    model = tiny_llama(2)
    kv = new_state(model, 0, "static")
    prompts = [[1, 2, 3, 4, 5], [6, 7]]
    fresh = KVState(model, 2)
    fresh.forward(*right_aligned(prompts))  # a prefill with a hole on the left of row 1
    kv.extend(fresh)
    histories = [list(p) for p in prompts]
    assert kv.runner.buffers.rows == 2 and kv.runner.capacity == 8
    for step, accepted in enumerate([[0, 2], [2, 0], [1, 1]]):  # 3 wide: padded to 4 columns
        chunk = torch.tensor([[20 + step, 30, 31], [21 + step, 40, 41]])
        before = kv.width
        logits = kv.forward(chunk, torch.ones(2, 3, dtype=torch.bool))
        assert torch.allclose(logits[1, 0], fresh_logits(model, histories[1] + [21 + step]), atol=1e-9)
        kv.truncate(torch.tensor([before + 1 + n for n in accepted]))
        for b, n in enumerate(accepted):
            histories[b] += chunk[b, : 1 + n].tolist()
    assert kv.runner.capacity == 16  # grew past 8 slots, contents carried over
    joining = [[50, 51, 52]]
    fresh = KVState(model, 1)
    fresh.forward(*right_aligned(joining))
    kv.extend(fresh)  # 3 rows: bucket 4, one padding row
    histories += joining
    chunk, valid = right_aligned([[60], [61, 62], [63]])  # holes on the left of rows 0 and 2
    logits = kv.forward(chunk, valid, last_only=True)[:, -1]
    for b, new in enumerate([[60], [61, 62], [63]]):
        histories[b] += new
        assert torch.allclose(logits[b], fresh_logits(model, histories[b]), atol=1e-9), f"row {b}"
    kv.select(torch.tensor([2, 0]))  # row 1 leaves; the others move up
    histories = [histories[2], histories[0]]
    logits = kv.forward(torch.tensor([[70], [71]]), torch.ones(2, 1, dtype=torch.bool))[:, -1]
    for b, tok in enumerate([70, 71]):
        assert torch.allclose(logits[b], fresh_logits(model, histories[b] + [tok]), atol=1e-9), f"row {b}"


@torch.no_grad()
def test_an_off_by_one_rollback_would_be_detected():
    model = tiny_llama(0)
    kv = new_state(model, 1, "static")
    kv.forward(torch.tensor([[5, 6, 7]]), torch.ones(1, 3, dtype=torch.bool))
    kv.forward(torch.tensor([[8, 30, 31]]), torch.ones(1, 3, dtype=torch.bool))
    kv.truncate(torch.tensor([3 + 1 + 1]))  # keeps x=8 and the rejected draft 30
    leaked = kv.forward(torch.tensor([[9]]), torch.ones(1, 1, dtype=torch.bool))[0, -1]
    assert not torch.allclose(leaked, fresh_logits(model, [5, 6, 7, 8, 9]), atol=1e-6)
    assert torch.allclose(leaked, fresh_logits(model, [5, 6, 7, 8, 30, 9]), atol=1e-9)


def test_a_state_whose_runner_was_claimed_since_is_refused(target):
    old = new_state(target, 1, "static")
    new_state(target, 1, "static")  # the next batch on the same model takes the buffers over
    with pytest.raises(RuntimeError, match="claimed"):
        old.forward(torch.tensor([[1]]), torch.ones(1, 1, dtype=torch.bool))


def test_replayed_hooks_are_the_drafters_taps(target, prompts):
    """graphs.py hands captured outputs to forward hooks after a replay: the EAGLE drafter's taps, while open
    (transformers' own output collectors, active only inside a forward, are left out)."""
    from specdeploy.engines.reference.runtime.eagle import FeatureTap
    from specdeploy.engines.reference.runtime.graphs import hooked_modules

    generate(ModelPair(target), prompts[:1], "none", 0, 1, 2)
    assert hooked_modules(target) == []
    tap = FeatureTap([target.model.layers[1]])
    assert hooked_modules(target) == [target.model.layers[1]]
    tap.close()
    assert hooked_modules(target) == []


def test_the_compiled_step_traces_whole_once_per_bucket(target, prompts, reference, monkeypatch):
    """What `compile` hands torch.compile, traced by dynamo on a CPU (its eager backend; `fullgraph`: one graph, no
    break): at most one compilation per bucket and model, never one per step (a Python value the step changed, such
    as a counter, would recompile every step), and the output equal to transformers' `generate`."""
    compiled, buckets, calls = [], set(), []

    def counting(graph, _inputs):
        compiled.append(graph)
        return graph.forward

    step = static_step.StaticRunner._compiled

    def seen(self, inputs):
        buckets.add((id(self), tuple(inputs["positions"].shape), "tokens" in inputs))
        calls.append(1)
        return step(self, inputs)

    monkeypatch.setattr(static_step, "CUDA_ONLY", ("graphs",))
    monkeypatch.setattr(
        static_step.StaticRunner, "compile_options", {"backend": counting, "fullgraph": True, "dynamic": False}
    )
    monkeypatch.setattr(static_step.StaticRunner, "_compiled", seen)
    out, _ = generate(ModelPair(target, decode="compile"), prompts[:4], "none", 0, 3, 6)
    assert out == [r[:6] for r in reference[:4]]
    fresh = tiny_llama(0)  # the same weights: adding the head's feature taps to a compiled target would recompile it
    out, _ = generate(ModelPair(fresh, tiny_head(fresh), decode="compile"), prompts[:4], "eagle3", 2, 3, 6)
    assert out == [r[:6] for r in reference[:4]]
    assert 4 < len(compiled) <= len(buckets) < len(calls)  # dynamo may share a graph between equal models


def test_a_model_decoded_in_a_static_mode_is_freed_with_its_buffers():
    """The runners' registry is keyed by the model: a runner holding it (or its state) strongly kept every model
    ever decoded in a static mode alive, with its K/V buffers and captured graphs (GPU memory)."""
    import gc
    import weakref

    model = tiny_llama(3)
    generate(ModelPair(model, decode="static"), [[1, 2, 3]], "none", 0, 1, 3)
    assert len(static_step._RUNNERS.get(model, {})) == 1
    alive = weakref.ref(model)
    del model
    gc.collect()
    assert alive() is None
