"""Acceptance profiles: prefix acceptance a_i per draft position, and E[AL](K) = 1 + sum_{i<=K} a_i
(docs/design/draft-length.md §1.2).

a_i is the probability that the first i drafted tokens are all accepted (a_i = prod_{j<=i} alpha_j). A profile
comes from a measured histogram at K_max, from conditional rates, or from the shipped table of published figures
(`priors.py`), which marks it `prior=True`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from specdeploy.errors import UsageError


def iid_al(alpha: float, k: int) -> float:
    """E[AL] of a chain of K drafts at i.i.d. acceptance alpha: 1 + alpha + ... + alpha^K."""
    return 1.0 + sum(alpha**i for i in range(1, k + 1))


def iid_alpha(al: float, k: int) -> float:
    """The i.i.d. alpha whose chain of K drafts has E[AL] = al (bisection; 1 <= al <= K + 1)."""
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if iid_al(mid, k) < al else (lo, mid)
    return (lo + hi) / 2


@dataclass(frozen=True)
class AcceptanceProfile:
    """Prefix acceptance a_1..a_n; positions past n accept nothing (a measured K_max is the limit of knowledge)."""

    prefix: tuple[float, ...]
    source: str = "measured"
    prior: bool = False

    def __post_init__(self) -> None:
        previous = 1.0
        for i, a in enumerate(self.prefix, 1):
            if not 0.0 <= a <= previous + 1e-9:
                raise UsageError(
                    f"acceptance profile: a_{i} = {a} must lie in [0, a_{i - 1} = {previous}]",
                    hint="prefix acceptance can only fall with the position",
                )
            previous = a

    @property
    def k_max(self) -> int:
        return len(self.prefix)

    def expected_al(self, k: int) -> float:
        """E[AL](K): tokens one step emits with K drafted tokens, the bonus token included."""
        return 1.0 + sum(self.prefix[: max(0, k)])

    def marginal(self, k: int) -> float:
        """a_(K+1): what drafting one more token adds to E[AL]."""
        return self.prefix[k] if k < len(self.prefix) else 0.0

    def conditional(self) -> list[float]:
        """alpha_j = a_j / a_(j-1)."""
        out, previous = [], 1.0
        for a in self.prefix:
            out.append(a / previous if previous > 0 else 0.0)
            previous = a
        return out

    def widened(self, width: float) -> AcceptanceProfile:
        """`width` independent candidates per depth: alpha'_j = 1 - (1 - alpha_j)^width. A tree's candidates are
        not independent: `predict.Tree.acceptance` passes its width ** gamma, gamma fitted on published tree ALs."""
        rates = [1.0 - (1.0 - a) ** width for a in self.conditional()]
        return AcceptanceProfile.from_conditional(rates, f"{self.source}; tree width {width:g}", self.prior)

    def to_dict(self) -> dict[str, Any]:
        return {"prefix": list(self.prefix), "source": self.source, "prior": self.prior}

    @classmethod
    def from_histogram(cls, hist: Sequence[float], source: str = "measured histogram") -> AcceptanceProfile:
        """h_n = share (or count) of steps that accepted exactly n of K_max drafted tokens, n = 0..K_max."""
        total = float(sum(hist))
        if len(hist) < 2 or total <= 0 or min(hist) < 0:
            raise UsageError("an acceptance histogram needs K_max + 1 >= 2 non-negative entries with a positive sum")
        shares = [h / total for h in hist]
        return cls(tuple(min(1.0, sum(shares[i:])) for i in range(1, len(shares))), source)

    @classmethod
    def from_conditional(
        cls, alphas: Sequence[float], source: str = "conditional rates", prior: bool = False
    ) -> AcceptanceProfile:
        prefix, running = [], 1.0
        for alpha in alphas:
            running *= alpha
            prefix.append(running)
        return cls(tuple(prefix), source, prior)

    @classmethod
    def iid(cls, alpha: float, k_max: int, source: str = "", prior: bool = False) -> AcceptanceProfile:
        """Leviathan et al.'s i.i.d. acceptance alpha: a_i = alpha^i."""
        return cls.from_conditional([alpha] * k_max, source or f"i.i.d. alpha = {alpha}", prior)

    @classmethod
    def from_user(
        cls,
        al: dict[int, float] | None = None,
        rates: Sequence[float] | None = None,
        positions: int = 64,
        where: str = "profile",
    ) -> AcceptanceProfile | None:
        """A user's own measurement (profile keys tune.acceptance_rates / tune.acceptance_al, given `where`: the
        profile, `--set`, `file:line`): per-position rates a_1, a_2, ... as engines report them, else one i.i.d.
        alpha fitted to the (K, AL) pairs (least squares over a 1/1000 grid of alpha); None when neither is given."""
        if rates:
            return cls(tuple(float(a) for a in rates), f"measured per-position acceptance ({where})")
        if not al:
            return None
        if len(al) == 1:
            ((k, value),) = al.items()
            alpha = iid_alpha(value, k)
        else:
            alpha = min(
                (i / 1000 for i in range(1001)), key=lambda a: sum((iid_al(a, k) - v) ** 2 for k, v in al.items())
            )
        pairs = ", ".join(f"AL {v:g} at K = {k}" for k, v in sorted(al.items()))
        return cls.iid(alpha, positions, f"measured {pairs} ({where}): i.i.d. alpha = {alpha:.3f}")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AcceptanceProfile:
        return cls(
            tuple(float(a) for a in data["prefix"]), str(data.get("source", "measured")), bool(data.get("prior", False))
        )
