"""Acceptance profiles and predictions, checked against hand-computed figures (docs/design/draft-length.md §1)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specdeploy.errors import UsageError
from specdeploy.perfmodel import AcceptanceProfile, ConstantTimer, predict, prior_profile
from specdeploy.perfmodel.priors import published


@pytest.mark.parametrize(
    ("alpha", "c", "k_star", "speedup"), [(0.8, 0.05, 8, 3.09), (0.6, 0.05, 4, 1.92), (0.9, 0.10, 10, 3.43)]
)
def test_leviathan_closed_form_reproduced(alpha: float, c: float, k_star: int, speedup: float) -> None:
    curves = predict(ConstantTimer(1.0, c), AcceptanceProfile.iid(alpha, 20), [1], list(range(1, 21)))
    assert curves.best[1].k == k_star
    assert curves.best[1].speedup == pytest.approx(speedup, abs=0.005)
    closed = (1 - alpha ** (k_star + 1)) / ((1 - alpha) * (k_star * c + 1))
    assert curves.best[1].speedup == pytest.approx(closed)


def test_gemma_mtp_worked_example() -> None:
    profile = AcceptanceProfile((0.84, 0.60, 0.39, 0.27))
    assert [round(profile.expected_al(k), 2) for k in range(1, 5)] == [1.84, 2.44, 2.83, 3.10]


def test_histogram_gives_prefix_acceptance() -> None:
    profile = AcceptanceProfile.from_histogram([20, 30, 25, 25])  # h_0..h_3 at K_max = 3
    assert profile.prefix == pytest.approx((0.8, 0.5, 0.25))
    assert profile.expected_al(3) == pytest.approx(2.55)
    assert profile.expected_al(5) == pytest.approx(2.55)  # nothing known past K_max


def test_bad_profiles_are_usage_errors() -> None:
    with pytest.raises(UsageError):
        AcceptanceProfile((0.5, 0.7))
    with pytest.raises(UsageError):
        AcceptanceProfile.from_histogram([0, 0])


def test_priors_are_marked_and_sourced() -> None:
    assert set(published()) >= {"mtp", "eagle3", "medusa", "lookahead"}  # every built-in declares its prior
    for name in published():
        profile = prior_profile(name)
        assert profile.prior and "prior" in profile.source and profile.k_max == 64
    assert "dsr1-mtp1-b200" in prior_profile("mtp").source
    assert prior_profile("someone-elses-drafter").prior


@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=16))
def test_expected_al_non_decreasing_in_k(alphas: list[float]) -> None:
    profile = AcceptanceProfile.from_conditional(alphas)
    als = [profile.expected_al(k) for k in range(len(alphas) + 2)]
    assert als[0] == 1.0
    assert all(b >= a for a, b in zip(als, als[1:]))


@given(st.floats(0.0, 0.99), st.floats(0.0, 1.0), st.integers(1, 512))
def test_speedup_at_k0_is_one(alpha: float, c: float, batch: int) -> None:
    curves = predict(ConstantTimer(0.01, c), AcceptanceProfile.iid(alpha, 4), [batch], [1, 2, 3, 4])
    k0 = next(p for p in curves.points if p.k == 0)
    assert k0.speedup == 1.0 and k0.al == 1.0


def test_speculation_off_when_drafting_costs_more_than_it_gains() -> None:
    curves = predict(ConstantTimer(1.0, 0.9), AcceptanceProfile.iid(0.5, 8), [1, 8], list(range(1, 9)))
    assert all(p.k == 0 for p in curves.best.values())
    assert curves.max_concurrency == 0
