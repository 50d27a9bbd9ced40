"""graphs.py's capture and replay logic on a CPU, with a double for torch's CUDA-graph API (no GPU here).

`FakeCUDAGraph` keeps a real graph's contract where it can bite the runtime: a replay recomputes the captured
step from the *captured* input tensors and writes the result into the tensors captured as outputs (the logits, and
every output a forward hook saw during capture), so anything read from a previous replay of that graph is
overwritten, and no forward hook of the model runs during a replay (graphs.py hands the hooked outputs over
itself). What the double cannot show — stream ordering, memory pools, capture-illegal ops — needs the GPU
(bench/gpu/graphs_check.py).
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from typing import Any

import pytest
import torch

from specdeploy.engines.reference.runtime import generate, graphs, static_step
from specdeploy.engines.reference.runtime.models import ModelPair
from tests.unit.runtime.tiny import MAX_NEW, drafting, noisy_copy, random_prompts, repetitive_prompts, tiny_head


class FakeStream:
    def wait_stream(self, _other: Any) -> None:
        pass


class FakeCUDAGraph:
    captures = 0
    replays = 0

    def __init__(self) -> None:
        FakeCUDAGraph.captures += 1
        self.runner: Any = None
        self.captured: Any = None

    def replay(self) -> None:
        FakeCUDAGraph.replays += 1
        modules = list(self.runner.model.modules())
        saved = [m._forward_hooks for m in modules]
        for m in modules:
            m._forward_hooks = OrderedDict()  # a replay runs kernels, not Python hooks
        try:
            for module, static in self.captured.hooked:
                module.register_forward_hook(lambda _m, _a, out, static=static: first(static).copy_(first(out)))
            logits = self.runner.forward(**self.captured.inputs)
        finally:
            for m, hooks in zip(modules, saved, strict=True):
                m._forward_hooks = hooks
        self.captured.output.copy_(logits)


def first(output: Any) -> torch.Tensor:
    return output[0] if isinstance(output, tuple) else output


@pytest.fixture
def fake_cuda(monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setattr(static_step, "CUDA_ONLY", ("compile",))
    monkeypatch.setattr(torch.cuda, "Stream", FakeStream)
    monkeypatch.setattr(torch.cuda, "current_stream", FakeStream)
    monkeypatch.setattr(torch.cuda, "stream", lambda _s: contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "CUDAGraph", FakeCUDAGraph)
    monkeypatch.setattr(torch.cuda, "graph", lambda _g: contextlib.nullcontext())
    real = graphs.capture

    def capture(runner: Any, inputs: dict[str, torch.Tensor]) -> Any:
        captured = real(runner, inputs)
        captured.graph.runner, captured.graph.captured = runner, captured
        return captured

    monkeypatch.setattr(graphs, "capture", capture)
    FakeCUDAGraph.captures = FakeCUDAGraph.replays = 0


@pytest.fixture(scope="module")
def prompts():
    return random_prompts(7, 96, seed=1) + repetitive_prompts(5, 96, seed=2)


@pytest.mark.usefixtures("fake_cuda")
def test_replayed_plain_decoding_matches_generate_and_captures_once_per_bucket(target, prompts, reference):
    for _ in range(2):  # the second call replays what the first captured
        out, _ = generate(ModelPair(target, decode="graphs"), prompts, "none", 0, 3, MAX_NEW)
        assert out == reference
    assert 0 < FakeCUDAGraph.captures <= 3 and FakeCUDAGraph.replays > 10 * FakeCUDAGraph.captures


@pytest.mark.usefixtures("fake_cuda")
@pytest.mark.parametrize("mechanism", ["draft_target", "eagle3"])
def test_replayed_speculation_drafts_exactly_as_eager(target, prompts, reference, mechanism, monkeypatch):
    """A target captured without hooks, then tapped by an EAGLE head (its graphs recaptured), then tapped by a new
    head's taps on the same layers (graphs kept: the replay must feed the new taps)."""
    generate(ModelPair(target, decode="graphs"), prompts[:2], "none", 0, 2, 3)
    drafter = noisy_copy(target, 3, 0.3) if mechanism == "draft_target" else tiny_head(target)
    eager, replayed = ModelPair(target, drafter), ModelPair(target, drafter, decode="graphs")
    for k in (1, 3, 4):
        out, stats, drafts = drafting(replayed, monkeypatch, prompts, mechanism, k, 3, MAX_NEW)
        assert out == reference, f"K={k}"
        _, expected, expected_drafts = drafting(eager, monkeypatch, prompts, mechanism, k, 3, MAX_NEW)
        assert drafts == expected_drafts, f"K={k}: the replayed drafter drafted differently"
        assert stats.accept_hist == expected.accept_hist
