"""Published acceptance figures per mechanism (each plugin's `Mechanism.prior`), turned into prior profiles
(docs/design/draft-length.md §3).
Every one is a prior: the tuner must replace it by a measured histogram before a schedule ships.

Where the published record (data/published.json) has acceptance lengths for a mechanism, the prior is derived from
those rows at load time and cites them (`rows`): an AL sweep over K gives a_i = AL(i) - AL(i-1); one AL at one K
gives the i.i.d. alpha with 1 + alpha + ... + alpha^K = AL. The other entries have no AL in the record; their
`basis` says what they rest on.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from specdeploy.perfmodel.acceptance import AcceptanceProfile, iid_alpha
from specdeploy.perfmodel.record import row
from specdeploy.plugin.registry import find, mechanism_names

PRIOR_POSITIONS = 64


@dataclass(frozen=True)
class PublishedAcceptance:
    mechanism: str
    conditional: tuple[float, ...]
    """alpha_1, alpha_2, ...; the last rate repeats up to PRIOR_POSITIONS."""
    basis: str
    source: str
    rows: tuple[str, ...] = field(default=())
    """Ids of the published rows the rates were derived from (empty: not from the record)."""


def from_sweep(mechanism: str, ids: tuple[str, ...]) -> PublishedAcceptance:
    """Prefix acceptance from an AL sweep over K = 1..n (one row per K)."""
    als = [row(i)["al"] for i in ids]
    prefix = tuple(b - a for a, b in zip((1.0, *als[:-1]), als))
    src = row(ids[0])["source"]
    return PublishedAcceptance(
        mechanism,
        _cond_from_prefix(prefix),
        "a_i = AL(K=i) - AL(K=i-1) from the published sweep AL = "
        + ", ".join(f"{a:.2f}" for a in als)
        + "; the last rate repeats",
        src,
        ids,
    )


def from_one(mechanism: str, row_id: str, note: str = "") -> PublishedAcceptance:
    """i.i.d. alpha fitted to one published AL at one K."""
    r = row(row_id)
    alpha = iid_alpha(r["al"], r["k"])
    return PublishedAcceptance(
        mechanism,
        (alpha,),
        f"i.i.d. alpha = {alpha:.3f}, the rate whose chain of K = {r['k']} gives the published AL {r['al']}{note}",
        r["source"],
        (row_id,),
    )


def _cond_from_prefix(prefix: tuple[float, ...]) -> tuple[float, ...]:
    return tuple(a / b for a, b in zip(prefix, (1.0, *prefix[:-1])))


def _declared(mechanism: str) -> PublishedAcceptance | None:
    """The prior the mechanism's plugin declares (`Mechanism.prior`), derived from the record where it cites rows."""
    try:
        cls = find(mechanism)
    except Exception:  # an unloadable plugin set must not break a what-if
        return None
    declared = cls.prior if cls is not None else None
    if declared is None:
        return None
    if declared.sweep:
        return from_sweep(mechanism, declared.sweep)
    if declared.row:
        return from_one(mechanism, declared.row, declared.note)
    return PublishedAcceptance(mechanism, declared.rates, declared.basis, declared.source)


def published() -> dict[str, PublishedAcceptance]:
    """Every installed mechanism's declared prior."""
    return {name: found for name in mechanism_names() if (found := _declared(name)) is not None}


GENERIC = PublishedAcceptance("*", (0.6,), "i.i.d. alpha = 0.6 for a mechanism without published figures", "assumed")


def prior_profile(mechanism: str, positions: int = PRIOR_POSITIONS) -> AcceptanceProfile:
    """The shipped prior for a mechanism (the generic one for unknown names), marked `prior=True`."""
    entry = _declared(mechanism) or GENERIC
    rates = list(entry.conditional[:positions])
    rates += [entry.conditional[-1]] * (positions - len(rates))
    cited = f"; rows {', '.join(entry.rows)}" if entry.rows else ""
    return AcceptanceProfile.from_conditional(rates, f"prior: {entry.basis} [{entry.source}{cited}]", prior=True)
