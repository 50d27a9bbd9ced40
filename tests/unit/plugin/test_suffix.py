"""Suffix decoding joins the mechanisms: vLLM only, its options bounded as vLLM bounds them, refused elsewhere with
the way out (TensorRT-LLM's own suffix automaton, `sa`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from specdeploy.issues import ProfileError
from specdeploy.plugin.registry import registry
from tests.helpers import profile_data, profile_problems, write_profile


def _issues(tmp_path: Path, data: dict[str, Any]) -> dict[str, tuple[str, str | None]]:
    from specdeploy.api import load_and_resolve

    with pytest.raises(ProfileError) as caught:
        load_and_resolve(str(write_profile(tmp_path / "p.yaml", data)))
    return {issue.message: (issue.dotted, issue.suggestion) for issue in caught.value.issues}


@pytest.mark.parametrize(
    ("runtime", "suggestion"),
    [
        ({"backend": "pytorch", "trtllm_version": "1.3.0"}, "on TensorRT-LLM 1.3 use mechanism: sa (suffix automaton)"),
        ({"backend": "tensorrt", "trtllm_version": "1.2.1"}, "on TensorRT-LLM 1.3 use mechanism: sa (PyTorch backend)"),
        ({"backend": "reference"}, "serve suffix decoding with vLLM (runtime.backend: vllm)"),
    ],
)
def test_only_vllm_runs_suffix_and_validation_points_elsewhere(
    tmp_path: Path, runtime: dict[str, str], suggestion: str
) -> None:
    found = _issues(tmp_path, profile_data(runtime=runtime, speculative={"mechanism": "suffix"}))
    why = next(message for message in found if message.startswith("suffix decoding is vLLM's"))
    assert "TensorRT-LLM's SA is a per-request suffix automaton" in why
    assert found[why] == ("speculative.mechanism", suggestion)


def test_suffix_runs_on_vllm_0_32_without_a_drafter() -> None:
    suffix = registry()["suffix"]
    assert suffix.supported() == {"vllm": ("0.32",)}
    assert not suffix.needs_draft_model and suffix.drafting == "none" and not suffix.chain
    assert suffix().draft_cost(None, 8, 12) == 0.0


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"max_tree_depth": 0}, "max_tree_depth"),  # vLLM: must be >= 1
        ({"max_cached_requests": -1}, "max_cached_requests"),  # >= 0
        ({"max_spec_factor": -0.5}, "max_spec_factor"),  # >= 0
        ({"min_token_prob": 1.5}, "min_token_prob"),  # in [0, 1]
        ({"min_token_prob": -0.1}, "min_token_prob"),
        ({"prompt_lookup_max": 4}, "prompt_lookup_max"),  # an n-gram option
    ],
)
def test_bad_options_are_refused_at_validate(tmp_path: Path, options: dict[str, Any], field: str) -> None:
    data = profile_data(runtime={"backend": "vllm"}, speculative={"mechanism": "suffix", "options": options})
    assert any(p.startswith(f"speculative.options.{field}:") for p in profile_problems(tmp_path, data))


def test_a_draft_len_above_the_tree_depth_is_refused(tmp_path: Path) -> None:
    data = profile_data(
        runtime={"backend": "vllm"},
        speculative={"mechanism": "suffix", "draft_len": 10, "options": {"max_tree_depth": 8}},
    )
    found = _issues(tmp_path, data)
    (message,) = [m for m in found if "max_tree_depth = 8" in m]
    assert found[message] == (
        "speculative.draft_len",
        "set draft_len <= 8, or raise speculative.options.max_tree_depth",
    )
    data["speculative"]["draft_len"] = 8
    assert profile_problems(tmp_path, data) == []
