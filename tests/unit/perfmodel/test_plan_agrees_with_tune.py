"""`plan` and `tune --backend model` are the same performance model on the same assumptions: for every shipped
profile plan's advised K per concurrency is the tuned schedule's, both print the one decode context they assume,
plan advises only concurrencies the profile can serve, and a `--set` acceptance is called `--set`."""

from __future__ import annotations

from pathlib import Path

import pytest

from specdeploy.api import plan, tune
from specdeploy.profile.shipped import shipped_profiles
from specdeploy.tune.emit import k_at


def _advised(name: str, *sets: str) -> tuple[object, dict[int, int]]:
    resolved, the_plan = plan(name, sets)
    return resolved, {r["concurrency"]: r["k"] for r in the_plan.advice_records if r["guideline"] == "schedule"}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(shipped_profiles()))
def test_plan_advises_the_k_the_model_tune_chooses(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPECDEPLOY_TUNE_MODEL_PACE_S", "0")
    resolved, advised = _advised(name)
    if not advised:  # no GPU named (the CPU runtime's profile), or a target no config.json describes here (Qwen3-Next
        assert resolved.gpu is None or resolved.target is None  # is in no catalog, offline): nothing to compare
        return
    ranges = tune(name, backend="model", out=tmp_path).schedule["ranges"]
    assert advised == {c: k_at(ranges, c) for c in advised}


def test_both_say_which_context_they_assume(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPECDEPLOY_TUNE_MODEL_PACE_S", "0")
    _, the_plan = plan("h200-eagle3")
    said = "context 576 tokens: a 512-token prompt + half of tune.output_len 128"  # the tune's own assumption
    assert said in the_plan.advice[0]
    assert any(said in note for note in tune("h200-eagle3", backend="model", out=tmp_path).schedule["notes"])


def test_plan_advises_only_concurrencies_the_profile_serves() -> None:
    resolved, advised = _advised("h100-ngram", "serving.max_batch_size=16")
    assert max(resolved.profile.tune.concurrency) > 16
    assert advised and max(advised) == 16


def test_an_acceptance_given_with_set_is_called_set() -> None:
    _, the_plan = plan("h200-eagle3", ("tune.acceptance_al.4=2.6",))
    (value,) = [v for v in the_plan.values if v["path"] == "tune.acceptance_al.4"]
    assert value["source"] == "--set"
    assert "measured AL 2.6 at K = 4 (--set)" in the_plan.advice[0] and "(profile)" not in the_plan.advice[0]
