"""Published acceptance figures per mechanism, turned into prior profiles (tuning.md §5). Every one is a prior:
the tuner must replace it by a measured histogram before a schedule ships.

Where a source gives only a speed-up or a mean AL, the profile is an i.i.d. or tail-extended fit to that figure;
`basis` says which, so a reviewer can check the arithmetic.
"""

from __future__ import annotations

from dataclasses import dataclass

from specdeploy.perfmodel.acceptance import AcceptanceProfile

PRIOR_POSITIONS = 64


@dataclass(frozen=True)
class PublishedAcceptance:
    mechanism: str
    conditional: tuple[float, ...]
    """alpha_1, alpha_2, ...; the last rate repeats up to PRIOR_POSITIONS."""
    basis: str
    source: str


def _cond_from_prefix(prefix: tuple[float, ...]) -> tuple[float, ...]:
    return tuple(a / b for a, b in zip(prefix, (1.0, *prefix[:-1])))


PUBLISHED: dict[str, PublishedAcceptance] = {p.mechanism: p for p in (
    PublishedAcceptance("mtp", _cond_from_prefix((0.875, 0.60, 0.39, 0.27)),
                        "a_1 = 0.875 (DeepSeek-V3 second-token acceptance 85-90%); a_2..a_4 from the Gemma-4 MTP "
                        "profile 0.84/0.60/0.39/0.27; tail alpha repeats", "DeepSeek-V3 report §5.4.3; "
                        "eugr/spark-vllm-docker#343"),
    PublishedAcceptance("eagle3", (0.80,), "i.i.d. alpha = 0.80 (chain drafting; SGLang Llama-3.1-8B 158 -> 373 "
                        "tok/s, i.e. AL ~ 2.4-3 at the shipped defaults)", "arXiv 2503.01840; SGLang docs"),
    PublishedAcceptance("eagle", (0.75,), "i.i.d. alpha = 0.75 (EAGLE-2 3.05-4.26x with trees; chain lower)",
                        "arXiv 2406.16858"),
    PublishedAcceptance("draft_target", (0.70,), "i.i.d. alpha = 0.70 (Llama-3.3-70B + 1B draft, 3.55x on H200)",
                        "NVIDIA developer blog, Dec 2024"),
    PublishedAcceptance("medusa", (0.60, 0.55, 0.50), "alpha 0.60 falling by 0.05 per head (Medusa 2.2-3.6x)",
                        "arXiv 2401.10774"),
    PublishedAcceptance("ngram", (0.30, 0.45), "fitted to chat AL 1.37 / 1.66 (turn 1 / 2): a_1 = 0.30, alpha 0.45 "
                        "after (AL(4) ~ 1.43)", "TRT-LLM blog7 (Llama-4-Scout, 8xB200)"),
    PublishedAcceptance("sa", (0.30, 0.45), "as ngram (suffix matching; no independent figure)", "TRT-LLM blog7"),
    PublishedAcceptance("lookahead", (0.45, 0.45), "i.i.d. alpha = 0.45 (1.5-2.3x on one GPU)",
                        "lmsys blog 2023-11-21"),
    PublishedAcceptance("dflash", (0.88,), "i.i.d. alpha = 0.88 (6.17x on Qwen3-8B, ~2.5x EAGLE-3's)",
                        "z-lab.ai/projects/dflash; arXiv 2602.06036"),
    PublishedAcceptance("pard", (0.75,), "i.i.d. alpha = 0.75 (parallel draft model; no figure in tuning.md)",
                        "assumed"),
    PublishedAcceptance("redrafter", (0.70,), "i.i.d. alpha = 0.70 (no figure in tuning.md)", "assumed"),
)}

GENERIC = PublishedAcceptance("*", (0.6,), "i.i.d. alpha = 0.6 for a mechanism without published figures", "assumed")


def prior_profile(mechanism: str, positions: int = PRIOR_POSITIONS) -> AcceptanceProfile:
    """The shipped prior for a mechanism (the generic one for unknown names), marked `prior=True`."""
    entry = PUBLISHED.get(mechanism, GENERIC)
    rates = list(entry.conditional[:positions])
    rates += [entry.conditional[-1]] * (positions - len(rates))
    return AcceptanceProfile.from_conditional(rates, f"prior: {entry.basis} [{entry.source}]", prior=True)
