"""Published acceptance figures per mechanism, turned into prior profiles (docs/design/draft-length.md §3). Every one
is a prior: the tuner must replace it by a measured histogram before a schedule ships.

Where the published record (data/published.json) has acceptance lengths for a mechanism, the prior is derived from
those rows at load time and cites them (`rows`): an AL sweep over K gives a_i = AL(i) - AL(i-1); one AL at one K
gives the i.i.d. alpha with 1 + alpha + ... + alpha^K = AL. The other entries have no AL in the record; their
`basis` says what they rest on.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from specdeploy.perfmodel.acceptance import AcceptanceProfile, iid_alpha
from specdeploy.perfmodel.record import row

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
    return PublishedAcceptance(mechanism, _cond_from_prefix(prefix),
                               "a_i = AL(K=i) - AL(K=i-1) from the published sweep AL = " + ", ".join(
                                   f"{a:.2f}" for a in als) + "; the last rate repeats", src, ids)


def from_one(mechanism: str, row_id: str, note: str = "") -> PublishedAcceptance:
    """i.i.d. alpha fitted to one published AL at one K."""
    r = row(row_id)
    alpha = iid_alpha(r["al"], r["k"])
    return PublishedAcceptance(mechanism, (alpha,), f"i.i.d. alpha = {alpha:.3f}, the rate whose chain of "
                               f"K = {r['k']} gives the published AL {r['al']}{note}", r["source"], (row_id,))


def _cond_from_prefix(prefix: tuple[float, ...]) -> tuple[float, ...]:
    return tuple(a / b for a, b in zip(prefix, (1.0, *prefix[:-1])))


PUBLISHED: dict[str, PublishedAcceptance] = {p.mechanism: p for p in (
    from_sweep("mtp", ("dsr1-mtp1-b200", "dsr1-mtp2-b200", "dsr1-mtp3-b200", "dsr1-mtp4-b200", "dsr1-mtp5-b200")),
    from_one("eagle3", "l31-8b-eagle3-al-mtbench", " (MT-bench, temperature 1)"),
    from_one("eagle", "l31-8b-eagle-k3-vllm-a100", " (MT-bench, vLLM's chain, EAGLE-1 head; the old alpha = 0.75 "
             "rested on EAGLE-2's tree speed-ups)"),
    PublishedAcceptance("draft_target", (0.70,), "i.i.d. alpha = 0.70; the record's draft-target rows publish "
                        "speedups without draft length or AL, so no AL to derive it from", "assumed"),
    PublishedAcceptance("medusa", (0.60, 0.55, 0.50), "alpha 0.60 falling by 0.05 per head (Medusa 2.2-3.6x)",
                        "arXiv 2401.10774"),
    from_one("ngram", "scout-ngram-al-turn1", " (generic chat, first turn)"),
    from_one("sa", "scout-ngram-al-turn1", " (TRT-LLM's n-gram is a suffix automaton; the same row)"),
    PublishedAcceptance("lookahead", (0.45, 0.45), "i.i.d. alpha = 0.45 (1.5-2.3x on one GPU)",
                        "lmsys blog 2023-11-21"),
    PublishedAcceptance("dflash", (0.88,), "i.i.d. alpha = 0.88 (6.17x on Qwen3-8B, ~2.5x EAGLE-3's)",
                        "z-lab.ai/projects/dflash; arXiv 2602.06036"),
    PublishedAcceptance("pard", (0.75,), "i.i.d. alpha = 0.75 (parallel draft model; no published figure)",
                        "assumed"),
    PublishedAcceptance("redrafter", (0.70,), "i.i.d. alpha = 0.70 (no published figure)", "assumed"),
)}

GENERIC = PublishedAcceptance("*", (0.6,), "i.i.d. alpha = 0.6 for a mechanism without published figures", "assumed")


def prior_profile(mechanism: str, positions: int = PRIOR_POSITIONS) -> AcceptanceProfile:
    """The shipped prior for a mechanism (the generic one for unknown names), marked `prior=True`."""
    entry = PUBLISHED.get(mechanism, GENERIC)
    rates = list(entry.conditional[:positions])
    rates += [entry.conditional[-1]] * (positions - len(rates))
    cited = f"; rows {', '.join(entry.rows)}" if entry.rows else ""
    return AcceptanceProfile.from_conditional(rates, f"prior: {entry.basis} [{entry.source}{cited}]", prior=True)
