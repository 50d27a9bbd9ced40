"""The reference model is decoupled exactly when the profile streams (serving.streaming, or triton.decoupled set
explicitly), as the llmapi and engine layouts decide it. Before, it was always decoupled, so unary gRPC ModelInfer,
HTTP /infer and perf_analyzer / GenAI-Perf without --streaming could not reach it."""

from __future__ import annotations

import pytest

from specdeploy.api import load_and_resolve
from specdeploy.engines.reference.triton_layout import ReferenceContext
from specdeploy.render.context import build_context
from specdeploy.render.model import RenderInputs
from specdeploy.render.writer import render_files


@pytest.mark.parametrize(
    ("sets", "decoupled"),
    [
        ((), True),  # cpu-smollm2 streams: make demo, the OpenAI endpoint and bench/serving.py stream
        (("serving.streaming=false",), False),
        (("serving.streaming=false", "triton.decoupled=true"), True),
    ],
)
def test_reference_decoupled_follows_streaming(sets: tuple[str, ...], decoupled: bool) -> None:
    context = build_context(load_and_resolve("cpu-smollm2", sets), RenderInputs(site_packages="/sp"))
    assert isinstance(context, ReferenceContext) and context.decoupled is decoupled
    config = render_files(context)["smollm2/config.pbtxt"].decode()
    assert f"decoupled: {str(decoupled).lower()}" in config
