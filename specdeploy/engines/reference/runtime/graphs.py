"""CUDA-graph capture and replay of a `StaticRunner`'s step, one graph per (batch, tokens, input kind) bucket.

NEVER RUN ON A GPU YET: written where no GPU was lent; bench/gpu/kit.py measures and checks it (identical greedy
output to eager) the first time one is. On a CPU, `decode_mode` refuses `graphs` before this module is reached.

Capture follows torch's recipe: the step runs once on a side stream (lazy allocations, kernel selection), then
once under `torch.cuda.graph`; replay copies new inputs into the captured input tensors and returns the captured
output tensor, which each replay overwrites. The warm-up writes this step's own K/V slots, which the replay writes
again with the same values. Forward hooks (the EAGLE drafter's feature taps) run during capture only, so the
outputs they saw there are recorded and handed to the modules' hooks again after every replay.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch


@dataclass
class Captured:
    """One bucket's graph and the tensors it reads and writes: replay copies into `inputs`, reads `output`."""

    graph: Any
    inputs: dict[str, torch.Tensor]
    output: torch.Tensor
    hooked: list[tuple[torch.nn.Module, Any]]  # (module, its output in the graph) for every module with hooks


def replay(runner: Any, key: tuple[int, int, bool], inputs: dict[str, torch.Tensor]) -> torch.Tensor:
    """The step's logits for these inputs, from the bucket's graph (captured on first use)."""
    if not runner.hooks_checked:  # once per batch: a new drafter may tap other modules
        tapped = {id(m) for m in hooked_modules(runner.model)}
        if tapped != runner.tapped:
            runner.graphs, runner.tapped = {}, tapped
        runner.hooks_checked = True
    captured = runner.graphs.get(key)
    if captured is None:
        captured = runner.graphs[key] = capture(runner, inputs)
    for name, tensor in inputs.items():
        captured.inputs[name].copy_(tensor)
    captured.graph.replay()
    for module, output in captured.hooked:
        for hook in own_hooks(module):
            hook(module, (), output)
    return captured.output


def capture(runner: Any, inputs: dict[str, torch.Tensor]) -> Captured:
    """Warm up on a side stream (lazy allocations and kernel choices must not happen under capture), then capture
    with the hooked modules' outputs recorded, so replay can hand them to the hooks."""
    static = {name: tensor.clone() for name, tensor in inputs.items()}
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        runner.buffers.updates, runner.buffers.counting = 0, True
        runner.forward(**static)
        runner.check_filled()
    torch.cuda.current_stream().wait_stream(side)
    modules = hooked_modules(runner.model)
    seen: dict[int, Any] = {}
    handles = [m.register_forward_hook(lambda mod, _args, out: seen.__setitem__(id(mod), out)) for m in modules]
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            output = runner.forward(**static)
    finally:
        for handle in handles:
            handle.remove()
    return Captured(graph, static, output, [(m, seen[id(m)]) for m in modules if id(m) in seen])


def own_hooks(module: torch.nn.Module) -> list[Any]:
    """A module's forward hooks, less those transformers installs itself: they act only inside a forward (its output
    collector is unset outside one), so replaying them would cost time and do nothing."""
    return [h for h in module._forward_hooks.values() if not getattr(h, "__module__", "").startswith("transformers")]


def hooked_modules(model: Any) -> list[torch.nn.Module]:
    """The modules whose hooks a replay must call (a new set means the graphs are stale: `replay`)."""
    return [m for m in model.modules() if own_hooks(m)]
