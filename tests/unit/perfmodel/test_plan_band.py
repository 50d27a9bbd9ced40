"""`plan` and `tune --backend model` say how sure the model is, and take the user's own acceptance."""

from __future__ import annotations

from pathlib import Path

import pytest

from specdeploy import api
from specdeploy.perfmodel import record
from specdeploy.perfmodel.acceptance import AcceptanceProfile
from specdeploy.profile.checks import acceptance_al, acceptance_rates


def test_plan_advice_carries_the_benchmark_band_and_throughput_records() -> None:
    _, plan = api.plan("h200-eagle3")
    band = record.band("eagle3", "h200")
    if band is None:
        pytest.skip("bench/perfmodel_published.py has not written data/bands.json")
    text = record.band_text("eagle3", "h200")
    assert any(text in line for line in plan.advice)
    records = plan.to_dict()["throughput"]
    assert [r["concurrency"] for r in records] == sorted(r["concurrency"] for r in records)
    for r in records:
        assert r["output_token_throughput"] == pytest.approx(r["speedup"] * r["plain_output_token_throughput"])
        assert r["plain_output_token_throughput"] == pytest.approx(
            r["concurrency"] * r["plain_output_token_throughput_per_user"]
        )
        assert r["speedup_max_rel_err"] == band["max_rel_err"]


def test_plan_uses_the_users_acceptance_in_place_of_the_prior() -> None:
    _, prior = api.plan("h200-eagle3")
    _, mine = api.plan("h200-eagle3", ("tune.acceptance_al.4=3.8",))
    _, rates = api.plan("h200-eagle3", ("tune.acceptance_rates=[0.9, 0.8, 0.7, 0.6]",))
    assert "prior" in prior.advice[0] and "measured AL 3.8 at K = 4" in mine.advice[0]
    assert "per-position" in rates.advice[0]
    best = {p["concurrency"]: p["speedup"] for p in mine.throughput}
    assert all(best[p["concurrency"]] > p["speedup"] for p in prior.throughput)


def test_user_acceptance_reproduces_what_was_given() -> None:
    assert AcceptanceProfile.from_user({4: 2.6}).expected_al(4) == pytest.approx(2.6, abs=1e-6)
    assert AcceptanceProfile.from_user(rates=[0.8, 0.5]).prefix == (0.8, 0.5)
    assert AcceptanceProfile.from_user() is None
    assert acceptance_al({8: 3.0, 2: 2.0}) == {2: 2.0, 8: 3.0}
    for bad in ({2: 3.5}, {0: 1.0}, {3: 0.5}):
        with pytest.raises(ValueError):
            acceptance_al(bad)
    with pytest.raises(ValueError):
        acceptance_rates([0.5, 0.8])


def test_tune_model_backend_reports_the_band_and_replays_only_the_same_acceptance(tmp_path: Path) -> None:
    from specdeploy.tune import run as tune_run

    res = tune_run.tune_resolved(
        api.load_and_resolve("h200-eagle3", ("tune.concurrency=[1, 8]",)), tmp_path, backend="model", report=False
    )
    assert res.error_band == record.band("eagle3", "h200")
    assert any(record.band_text("eagle3", "h200") in n for n in res.schedule["notes"])
    other = tune_run.tune_resolved(
        api.load_and_resolve("h200-eagle3", ("tune.concurrency=[1, 8]", "tune.acceptance_al.4=3.8")),
        tmp_path,
        backend="model",
        report=False,
    )
    assert other.cost["replayed"] == 0
    prior, mine = ([m["values"]["al"] for m in r.measurements if "al" in m["values"]] for r in (res, other))
    assert mine and mine != prior  # the model backend predicts with the user's acceptance, not the prior
