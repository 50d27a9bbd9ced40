"""PARD: a parallel draft model predicts several masked positions in one forward (TRT-LLM 1.3 line)."""

from __future__ import annotations

from collections.abc import Iterator

from specdeploy.plugin import CheckContext, Mechanism
from specdeploy.profile.issues import Issue
from specdeploy_mechanisms._common import same_vocabulary


class Pard(Mechanism):
    name = "pard"
    summary = "parallel draft model: K positions in one drafter forward; TRT-LLM 1.3 line"
    needs_draft_model = True
    chain = False
    support = {"pytorch": ("1.3",)}
    max_draft_len = 16
    default_draft_len = 4

    def check(self, ctx: CheckContext) -> Iterator[Issue]:
        yield from same_vocabulary(ctx)
