"""CPU kernels that give the reference runtime a GPU-like cost curve: verifying K + 1 tokens costs
little more than decoding one.

With fp32 weights, torch's MKL GEMM for 2..9 rows reads the weights once per row (a T = 2 forward of
SmolLM2-135M measured 1.6x a T = 1 forward), and transformers' SDPA path copies every layer's KV
cache (`repeat_kv`) as soon as a mask is present — so on a CPU speculation could never pay. Two
fixes, both inference-only:

- every `nn.Linear` becomes FBGEMM's fp16-weight / fp32-activation GEMM (`quantized::linear_dynamic_fp16`):
  half the weight bytes, and one weight pass for all rows. The SmolLM2 weights come from a Q4_1 GGUF
  (fp16 scales), so fp16 storage is within 2^-11 of them; the model served *is* this fp16-weight model,
  for plain and speculative decoding alike, so greedy speculation stays token-identical to plain;
- attention runs grouped-query heads natively (`enable_gqa=True`) instead of repeating K/V.
"""

from __future__ import annotations

from typing import Any

import torch

ATTENTION = "specdeploy_sdpa_gqa"


class Fp16Linear(torch.nn.Module):
    """`nn.Linear` with its weight pre-packed for FBGEMM (fp16 storage, fp32 math)."""

    def __init__(self, linear: torch.nn.Linear) -> None:
        super().__init__()
        bias = None if linear.bias is None else linear.bias.detach().float()
        self.packed = torch.ops.quantized.linear_prepack_fp16(linear.weight.detach().float(), bias)
        self.in_features, self.out_features = linear.in_features, linear.out_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, self.in_features)
        return torch.ops.quantized.linear_dynamic_fp16(rows, self.packed).reshape(*x.shape[:-1], self.out_features)


def available() -> bool:
    """FBGEMM needs an x86 CPU with AVX2; elsewhere the model keeps its fp32 linears."""
    return "fbgemm" in torch.backends.quantized.supported_engines


def optimize_for_cpu(model: Any) -> Any:
    """Swap in the fast kernels (in place); a no-op off CPU. Weights stay as they are without FBGEMM or
    when the model is not fp32 (the packed GEMM takes fp32 activations only)."""
    weight = next(model.parameters())
    if weight.device.type != "cpu":
        return model
    _register_attention()
    model.set_attn_implementation(ATTENTION)
    if not available() or weight.dtype != torch.float32:
        return model
    for module in list(model.modules()):
        for name, child in list(module.named_children()):
            if isinstance(child, torch.nn.Linear):
                setattr(module, name, Fp16Linear(child))
    model.specdeploy_weights = "fp16 (FBGEMM packed), fp32 activations"
    return model


def weights_description(model: Any) -> str:
    return str(getattr(model, "specdeploy_weights", str(next(model.parameters()).dtype).removeprefix("torch.")))


def sdpa_gqa_forward(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    is_causal: bool | None = None,
    **_: Any,
) -> tuple[torch.Tensor, None]:
    """transformers' SDPA attention, minus the K/V repeat: query heads share their KV head in the kernel."""
    causal = (
        query.shape[2] > 1
        and attention_mask is None
        and (is_causal if is_causal is not None else getattr(module, "is_causal", True))
    )
    out = torch.nn.functional.scaled_dot_product_attention(
        query,
        key,
        value,
        attn_mask=attention_mask,
        dropout_p=dropout,
        scale=scaling,
        is_causal=causal,
        enable_gqa=query.shape[1] != key.shape[1],
    )
    return out.transpose(1, 2).contiguous(), None


def _register_attention() -> None:
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(ATTENTION, sdpa_gqa_forward)
    AttentionMaskInterface.register(ATTENTION, sdpa_mask)
