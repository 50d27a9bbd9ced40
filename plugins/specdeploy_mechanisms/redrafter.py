"""ReDrafter: an RNN drafter with beam search (engine backend, TRT-LLM <= 1.2.x)."""

from __future__ import annotations

from specdeploy.plugin import Mechanism
from specdeploy_mechanisms._common import options


class Redrafter(Mechanism):
    name = "redrafter"
    summary = "recurrent drafter with beam search; engine backend only (explicit_draft_tokens)"
    Options = options("RedrafterOptions")
    needs_draft_model = True
    chain = False
    support = {"tensorrt": ("1.2",)}
    max_draft_len = 16
    default_draft_len = 4
