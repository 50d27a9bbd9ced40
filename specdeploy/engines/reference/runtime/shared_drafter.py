"""Drafters that borrow the target's embedding and LM head: what their folders hold beyond their own layers
(`specdeploy_drafter.json`, the draft vocabulary) and how they are tied to the target when loaded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

DRAFT_VOCAB_KEY = "draft_vocab_ids"
SHARED_META = "specdeploy_drafter.json"  # marks a drafter folder whose embedding/LM head come from the target


def share_embeddings(drafter: Any, target: Any, vocab_ids: Any = None) -> None:
    """Borrow the target's embedding; the LM head is the target's, cut to `vocab_ids` when given.

    A drafter head over a frequent-token subset is ~6x cheaper than the full 49k-row head; the
    runtime maps its outputs back to full ids (`drafter.draft_vocab`), so drafts stay valid tokens.
    """
    import torch

    embed = target.get_input_embeddings().weight
    drafter.model.embed_tokens.weight = embed
    if vocab_ids is None:
        drafter.lm_head.weight = target.get_output_embeddings().weight
        drafter.draft_vocab = None
        return
    ids = vocab_ids.to(torch.long).to(embed.device)
    head = torch.nn.Linear(embed.shape[1], len(ids), bias=False, device=embed.device, dtype=embed.dtype)
    head.weight = torch.nn.Parameter(target.get_output_embeddings().weight.detach()[ids].clone(), requires_grad=False)
    drafter.lm_head = head
    drafter.draft_vocab = ids


def own_drafter_state(drafter: Any) -> dict[str, Any]:
    """The tensors a shared drafter commits: its layers and norm (bf16) plus its draft vocabulary."""
    import torch

    own = {
        k: v.detach().to(torch.bfloat16).contiguous()
        for k, v in drafter.state_dict().items()
        if "embed_tokens" not in k and "lm_head" not in k
    }
    if getattr(drafter, "draft_vocab", None) is not None:
        own[DRAFT_VOCAB_KEY] = drafter.draft_vocab.to(torch.int64).cpu().contiguous()
    return own


def write_shared_meta(folder: Path, target_ref: str, extra: dict[str, Any] | None = None) -> None:
    from specdeploy._io import write_json_atomic

    write_json_atomic(folder / SHARED_META, {"shares_embeddings_with": target_ref, **(extra or {})})
