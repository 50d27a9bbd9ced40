"""Selection policy and guard: ties go to the smaller K, noisy points are rejected, K = 0 where speculation
does not beat plain decoding beyond noise, an unreachable SLA says so with the closest point."""

from __future__ import annotations

from specdeploy.tune.book import Book
from specdeploy.tune.objective import Summary, beats, select
from specdeploy.tune.setup import TuneSetup
from specdeploy.tune.types import Measurement, Request


def book_with(points: dict[tuple[int, int], list[float]], **kw) -> Book:  # noqa: ANN003
    setup = TuneSetup("p", "eagle3", True, tuple(sorted({c for c, _ in points})), (1, 2, 3, 4), **kw)
    book = Book(setup)
    for (c, k), xs in points.items():
        book.add(
            [
                Measurement(
                    Request("e2e", c, k, r),
                    {"output_token_throughput": x, "output_token_throughput_per_user": x / c, "p99_itl_ms": 1000 / x},
                )
                for r, x in enumerate(xs)
            ]
        )
    return book


def test_within_one_percent_the_smaller_k_wins() -> None:
    assert select({2: Summary(100.0, 0.0, 3), 4: Summary(100.9, 0.0, 3)}) == 2
    assert select({2: Summary(100.0, 0.0, 3), 4: Summary(101.5, 0.0, 3)}) == 4
    book = book_with({(1, 0): [50, 50, 50], (1, 3): [100.5, 100.4, 100.6], (1, 4): [101, 101.2, 100.9]})
    assert book.decide(1).k == 3


def test_non_monotonic_optima_are_kept() -> None:
    book = book_with(
        {
            (1, 0): [10] * 3,
            (1, 2): [20] * 3,
            (1, 4): [30] * 3,
            (8, 0): [80] * 3,
            (8, 2): [120] * 3,
            (8, 4): [100] * 3,
            (32, 0): [200] * 3,
            (32, 2): [210] * 3,
            (32, 4): [260] * 3,
        }
    )
    assert [book.decide(c).k for c in (1, 8, 32)] == [4, 2, 4]


def test_guard_turns_speculation_off_where_it_does_not_pay() -> None:
    book = book_with({(64, 0): [1000, 1010, 990], (64, 2): [1016, 1022, 1005], (64, 4): [900, 905, 910]})
    d = book.decide(64)
    assert d.k == 0 and "does not beat plain decoding" in d.reason
    assert not beats(Summary(1005, 8, 3), Summary(1000, 10, 3))
    assert beats(Summary(1100, 8, 3), Summary(1000, 10, 3))


def test_noisy_points_are_rejected() -> None:
    book = book_with({(4, 0): [100, 100, 100], (4, 3): [180, 120, 240]})
    d = book.decide(4)
    assert d.rejected == [3] and d.k == 0
    assert book.noisy() == [(4, 3)]


def test_unreachable_sla_gives_zero_objective_and_the_closest_point() -> None:
    book = book_with({(8, 0): [100] * 3, (8, 2): [150] * 3}, objective="goodput", p99_itl_ms=1.0)
    d = book.decide(8)
    assert d.k == 0 and not d.feasible
    k, overshoot = book.closest(8)
    assert k == 2 and round(overshoot, 3) == round(1000 / 150 - 1, 3)


def test_a_uniformly_noisy_machine_rejects_only_the_noisiest_point() -> None:
    noisy = {(1, 0): [100, 108, 92], (1, 2): [150, 162, 138], (2, 0): [190, 205, 175], (2, 2): [300, 480, 200]}
    book = book_with(noisy)
    assert round(book.noise_limit(), 3) == 0.16  # twice the typical 8% spread, not the 5% default
    assert book.noisy() == [(2, 2)] and book.decide(1).k == 2
    assert book_with({(1, 0): [100, 101, 99], (1, 2): [150, 151, 149], (2, 2): [150, 162, 138]}).noisy() == [(2, 2)]


def test_points_all_rejected_as_noisy_are_not_reported_as_an_sla_miss() -> None:
    book = book_with({(2, 3): [180, 120, 240]})  # no SLA; the only point measured is too noisy to trust
    d = book.decide(2)
    assert d.rejected == [3] and d.k == 0 and d.feasible
    assert "noisier than" in d.reason and "SLA" not in d.reason


def test_a_point_with_one_run_over_the_sla_is_not_served() -> None:
    """p99 ITL = 1000 / tok/s here: K = 4's third run (40 tok/s, 25 ms) breaks the 20 ms SLA its first two meet."""
    book = book_with({(4, 0): [60] * 3, (4, 2): [80] * 3, (4, 4): [100, 100, 40]}, objective="goodput", p99_itl_ms=20.0)
    assert book.over_sla(4) == [4]
    d = book.decide(4)
    assert d.k == 2 and d.feasible and 4 not in d.rejected
