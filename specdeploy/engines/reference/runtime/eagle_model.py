"""An EAGLE-3-style drafter for the reference runtime: one decoder layer that reads the target's own
hidden states, so it knows what the target "meant" and agrees with it far more often than a small
stand-alone model (arXiv 2503.01840).

Input at position t: `fc([embed(x_{t+1}); g_t])`, where g_t is `fuse(concat of the target's hidden
states at t from a low, a middle and a high layer)` for positions the target has verified, and the
drafter's own last hidden state at t for the positions it drafts itself (the chain). Output: the next
token over a frequent-token draft vocabulary (the target's LM head cut to it, as for the small drafter).
The folder stores only the drafter's own tensors; the embedding and head come from the target.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from specdeploy.engines.reference.runtime.shared_drafter import (
    DRAFT_VOCAB_KEY,
    own_drafter_state,
    share_embeddings,
    write_shared_meta,
)


def default_feature_layers(layers: int) -> tuple[int, int, int]:
    """A low, a middle and a high decoder layer whose outputs feed the head: TensorRT-LLM's default
    `eagle3_layers_to_capture` {1, L/2 - 1, L - 4} (the EAGLE-3 reference code's hidden_states 2, L/2, L - 3)."""
    return 1, layers // 2 - 1, layers - 4


class EagleHead(torch.nn.Module):
    """fuse + fc + a one-layer Llama body whose embedding and LM head are the target's."""

    def __init__(self, config: Any, feature_layers: tuple[int, ...]) -> None:
        from transformers import LlamaForCausalLM

        super().__init__()
        hidden = config.hidden_size
        self.config = config
        self.feature_layers = tuple(feature_layers)
        self.fuse = torch.nn.Linear(len(self.feature_layers) * hidden, hidden, bias=False)
        self.fc = torch.nn.Linear(2 * hidden, hidden, bias=False)
        self.body = LlamaForCausalLM(config)

    @property
    def draft_vocab(self) -> Any:
        return getattr(self.body, "draft_vocab", None)

    def set_attn_implementation(self, name: str) -> None:
        self.body.set_attn_implementation(name)

    def inputs(self, tokens: torch.Tensor, context: torch.Tensor, fused: bool) -> torch.Tensor:
        """[B, w, H] body inputs; `context` is target features ([B, w, 3H], fused) or own hidden ([B, w, H])."""
        g = self.fuse(context) if fused else context
        return self.fc(torch.cat([self.body.model.embed_tokens(tokens), g], -1))


def own_state(head: EagleHead) -> dict[str, torch.Tensor]:
    """What the drafter folder stores: everything but the borrowed embedding and head, plus the vocabulary."""

    state = {f"body.{k}": v for k, v in own_drafter_state(head.body).items()}
    state.update(
        {
            k: v.detach().to(torch.bfloat16).contiguous()
            for k, v in head.state_dict().items()
            if k.startswith(("fuse.", "fc."))
        }
    )
    return state


def save_eagle(head: EagleHead, folder: Path, target_ref: str, extra: dict[str, Any] | None = None) -> None:
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    head.config.save_pretrained(folder)
    save_file(own_state(head), str(folder / "model.safetensors"))
    meta = {"kind": "head", "feature_layers": list(head.feature_layers)}  # kind: declare.DrafterKind
    write_shared_meta(folder, target_ref, {**meta, **(extra or {})})


def load_eagle(folder: Path, target: Any, meta: dict[str, Any]) -> EagleHead:
    """Rebuild the head from its folder and borrow the target's embedding and (cut) LM head."""
    from safetensors.torch import load_file
    from transformers import LlamaConfig

    from specdeploy.errors import UsageError

    config = LlamaConfig.from_pretrained(folder)
    layers = tuple(int(i) for i in meta.get("feature_layers", ()))
    depth = int(target.config.num_hidden_layers)
    if config.hidden_size != target.config.hidden_size or not layers or not all(0 <= i < depth for i in layers):
        raise UsageError(f"EAGLE drafter {folder} was trained for another target (width or layers differ)")
    head = EagleHead(config, layers).to(torch.float32)
    state = load_file(str(folder / "model.safetensors"))
    vocab_ids = state.pop(f"body.{DRAFT_VOCAB_KEY}", None)
    missing, unexpected = head.load_state_dict({k: v.to(torch.float32) for k, v in state.items()}, strict=False)
    if unexpected or any("embed_tokens" not in k and "lm_head" not in k for k in missing):
        raise UsageError(f"EAGLE drafter weights in {folder} do not match its config")
    share_embeddings(head.body, target, vocab_ids)
    return head
