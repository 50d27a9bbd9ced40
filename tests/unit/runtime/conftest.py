"""The target every lossless test of the runtime decodes with: a tiny float64 Llama (tiny.py), built once per module,
and transformers' greedy answers to the module's own `prompts`."""

from __future__ import annotations

import pytest

pytest.importorskip("torch", reason="the reference runtime's tests need the reference extra (torch, transformers)")
pytest.importorskip("transformers", reason="the reference runtime's tests need the reference extra")

from tests.unit.runtime.tiny import MAX_NEW, hf_greedy, tiny_llama


@pytest.fixture(scope="module")
def target():  # type: ignore[no-untyped-def]
    return tiny_llama(0)


@pytest.fixture(scope="module")
def reference(target, prompts):  # type: ignore[no-untyped-def]
    return hf_greedy(target, prompts, MAX_NEW)
