"""N-gram / prompt lookup: drafts copied from earlier text; no drafter model, near-zero drafting cost."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from specdeploy.plugin import Mechanism


class NgramOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_matching_ngram_size: int = Field(
        3,
        ge=1,
        le=32,
        description="Longest suffix matched against the pool (always emitted: the 1.2.1 default is unconfirmed).",
    )
    is_keep_all: bool = Field(True, description="Keep every candidate, not only the longest match.")
    is_use_oldest: bool = Field(True, description="Propose the oldest match.")
    is_public_pool: bool = Field(True, description="One pool shared by all requests.")


class Ngram(Mechanism):
    name = "ngram"
    summary = "prompt lookup: copies continuations of earlier n-grams; free drafting, input-grounded gains"
    Options = NgramOptions
    chain = False
    support = {"pytorch": ("1.2", "1.3"), "reference": ("cpu",)}
    max_draft_len = 32
    default_draft_len = 4
