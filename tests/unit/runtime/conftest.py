"""The target every lossless test of the runtime decodes with: a tiny float64 Llama (tiny.py), built once per module."""

from __future__ import annotations

import pytest

from tests.unit.runtime.tiny import tiny_llama


@pytest.fixture(scope="module")
def target():  # type: ignore[no-untyped-def]
    return tiny_llama(0)
