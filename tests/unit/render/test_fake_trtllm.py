"""The `tensorrt_llm` TEST DOUBLE (tests/fixtures/fake_trtllm) itself: what it refuses, the K it uses per batch,
its answers. Run in a subprocess: importing it here would put a fake `tensorrt_llm` in this process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

FAKE = Path(__file__).resolve().parents[2] / "fixtures" / "fake_trtllm"
SCRIPT = r"""
import asyncio, json, sys
from tensorrt_llm import LLM, SamplingParams
from tensorrt_llm._double import draft_len_at
out = {}
try:
    LLM()
except TypeError as exc:
    out["no_model"] = str(exc)
for name, kwargs in (("unknown", {"max_batch_sise": 8}),
                     ("decoding_type", {"speculative_config": {"decoding_type": "Draft-Target", "max_draft_len": 2}})):
    try:
        LLM("m", **kwargs)
    except ValueError as exc:
        out[name] = str(exc)
lower = "1.2" in sys.argv[1]
schedule = {"decoding_type": "DraftTarget" if lower else "Draft_Target", "max_draft_len": 4,
            "speculative_model": "d", "draft_len_schedule": {1: 4, 4: 2, 8: 0}}
out["k"] = {b: draft_len_at(schedule, b, lower) for b in (1, 3, 4, 7, 8, 9)}
out["k_limit"] = [draft_len_at({**schedule, "draft_len_schedule": None, "max_concurrency": 2}, b, lower)
                  for b in (1, 2, 3)]
llm = LLM("m", max_batch_size=8, speculative_config=schedule)
out["generate"] = [o.outputs[0].text for o in llm.generate(["a b c", "x y"], SamplingParams(max_tokens=5))]

async def many():
    gens = [llm.generate_async(f"p {i}", SamplingParams(max_tokens=12)) for i in range(6)]
    last = []
    for g in gens:  # an async comprehension inside another comprehension needs Python 3.11
        last.append([o async for o in g][-1].outputs[0].text)
    return last

out["async"] = asyncio.run(many())
out["stats"] = llm.engine.stats
llm.shutdown()
print(json.dumps(out))
"""


def _run(release: str) -> dict:  # type: ignore[type-arg]
    env = {**os.environ, "PYTHONPATH": str(FAKE), "FAKE_TRTLLM_VERSION": release}
    env.pop("FAKE_TRTLLM_RECORD", None)
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, release], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("release", "ks"),
    [
        ("1.2.1", {"1": 4, "3": 4, "4": 2, "7": 2, "8": 0, "9": 0}),
        ("1.3.0", {"1": 4, "3": 2, "4": 2, "7": 0, "8": 0, "9": 0}),
    ],
)
def test_double_refuses_like_the_table_and_schedules_k_per_batch(release: str, ks: dict) -> None:  # type: ignore[type-arg]
    out = _run(release)
    assert "missing 1 required positional argument: 'model'" in out["no_model"]
    assert f"fake tensorrt_llm {release}: LLM() arguments refused" in out["unknown"]
    assert "max_batch_sise: unknown field" in out["unknown"]
    assert "decoding_type: unknown 'Draft-Target'" in out["decoding_type"]
    assert out["k"] == ks  # 1.2 reads keys as lower bounds, 1.3 as upper bounds (off above the last key)
    assert out["k_limit"] == [4, 4, 0]  # no schedule: max_draft_len, off above max_concurrency
    assert out["generate"] == ["c b a c b", "y x y x y"]
    assert out["async"] == [" ".join([str(i), "p"] * 6) for i in range(6)]
    assert out["stats"]["max_in_flight"] == 6
    assert out["stats"]["k_at_batch"]["6"] == (0 if release == "1.3.0" else 2)  # six in flight: K at batch 6
