"""Greedy output of vLLM with each speculative config equals vLLM's plain decoding of the same prompts (fp32), and
the exported drafters are accepted: one engine per config, both concurrencies through it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from specdeploy.engines.vllm.measure import Job, Result, measure

PROMPTS = 4
MAX_TOKENS = 32
CONCURRENCY = (1, 4)


def _job(target: Path, spec: dict[str, Any] | None) -> Job:
    from specdeploy.prompts import sample_prompts

    prompts = [(r.turns[0], not r.raw) for r in sample_prompts("mt-bench", PROMPTS)]
    return Job(target, prompts, CONCURRENCY, MAX_TOKENS, spec, enforce_eager=True)


@pytest.fixture(scope="module")
def plain(vllm_python: Path, target: Path, tmp_path_factory: pytest.TempPathFactory) -> Result:
    return measure(vllm_python, _job(target, None), tmp_path_factory.mktemp("plain") / "vllm.log")


def _configs() -> list[Any]:
    from specdeploy.engines.vllm.export import draft_model_folder, eagle3_folder

    return [
        pytest.param(
            lambda: {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 2},
            id="ngram",
        ),
        pytest.param(lambda: {"model": str(draft_model_folder()), "num_speculative_tokens": 3}, id="draft_model"),
        pytest.param(
            lambda: {"method": "eagle3", "model": str(eagle3_folder()), "num_speculative_tokens": 3}, id="eagle3"
        ),
    ]


@pytest.mark.slow
@pytest.mark.parametrize("config", _configs())
def test_speculative_output_equals_plain(
    config: Any, plain: Result, vllm_python: Path, target: Path, tmp_path: Path
) -> None:
    spec = measure(vllm_python, _job(target, config()), tmp_path / "vllm.log")
    for base, point in zip(plain.points, spec.points, strict=True):
        assert point.token_ids == base.token_ids, f"c={point.concurrency}: speculative output differs from plain"
        assert point.drafts > 0
        assert len(point.accepted_per_position) == 3
    # the shipped drafters are accepted in vLLM as in the reference runtime (AL > 1 at c = 1)
    assert spec.points[0].acceptance_length > 1.0
    assert plain.points[0].drafts == 0
