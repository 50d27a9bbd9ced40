"""N-gram / prompt lookup: drafts copied from earlier text; no drafter model, near-zero drafting cost."""

from __future__ import annotations

from specdeploy.plugin import Mechanism
from specdeploy_mechanisms._common import options


class Ngram(Mechanism):
    name = "ngram"
    summary = "prompt lookup: copies continuations of earlier n-grams; free drafting, input-grounded gains"
    Options = options("NgramOptions")
    chain = False
    support = {"pytorch": ("1.2", "1.3"), "reference": ("cpu",)}
    max_draft_len = 32
    default_draft_len = 4
