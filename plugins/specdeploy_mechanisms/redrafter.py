"""ReDrafter: an RNN drafter with beam search (engine backend, TRT-LLM <= 1.2.x)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from specdeploy.plugin import Mechanism


class RedrafterOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    num_beams: int = Field(5, ge=1, le=32, description="Beams drafted per step (`--redrafter_num_beams`).")


class Redrafter(Mechanism):
    name = "redrafter"
    summary = "recurrent drafter with beam search; engine backend only (explicit_draft_tokens)"
    Options = RedrafterOptions
    needs_draft_model = True
    chain = False
    support = {"tensorrt": ("1.2",)}
    max_draft_len = 16
    default_draft_len = 4
