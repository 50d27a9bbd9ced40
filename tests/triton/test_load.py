"""The bounded load test (bench/load.py): 64 concurrent requests to the served reference model, 8 malformed;
every good answer identical to its sequential one, every malformed one refused with its reason, the server alive."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.mark.slow
def test_64_concurrent_requests(tmp_path: Path, backends: Path) -> None:  # noqa: ARG001 - backends: skip without Triton
    pytest.importorskip("torch")
    sys.path.insert(0, str(BENCH))
    try:
        from load import run
    finally:
        sys.path.remove(str(BENCH))
    result = run(64, tmp_path)
    assert result["good"] == 56 and result["identical_to_sequential"] == 56, result
    assert result["malformed"] == 8 and result["refused_with_reason"] == 8, result
    assert result["server_alive_after"], result
