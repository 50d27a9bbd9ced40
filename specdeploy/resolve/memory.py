"""Memory fit: weights / TP + KV cache for max_batch x max_seq + a stated margin vs GPU memory."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from specdeploy.resolve.gpus import GpuSpec
from specdeploy.resolve.model_spec import ModelSpec

GIB = 1024**3
MARGIN_FRACTION = 0.08
"""Reserved for the CUDA context, activations, CUDA graphs and workspaces (8% of the GPU, at least 2 GiB)."""
MARGIN_MIN = 2 * GIB


@dataclass(frozen=True)
class Fit:
    """Per-GPU memory budget in bytes, and what to lower when it does not fit."""

    gpu_memory: int
    weights: int
    draft_weights: int
    kv_cache: int
    margin: int
    shards: int

    @property
    def needed(self) -> int:
        return self.weights + self.draft_weights + self.kv_cache + self.margin

    @property
    def fits(self) -> bool:
        return self.needed <= self.gpu_memory

    @property
    def weights_fit(self) -> bool:
        return self.weights + self.draft_weights + self.margin <= self.gpu_memory

    def to_dict(self) -> dict[str, float | int | bool]:
        return {**{k: round(v / GIB, 2) for k, v in asdict(self).items() if k != "shards"},
                "shards": self.shards, "needed": round(self.needed / GIB, 2), "fits": self.fits, "unit": "GiB"}

    def explain(self, max_batch: int, max_seq: int) -> tuple[str, str]:
        """(message, hint) for a profile that does not fit."""
        g = lambda b: f"{b / GIB:.1f} GiB"  # noqa: E731
        message = (f"does not fit: weights {g(self.weights)} + drafter {g(self.draft_weights)} + KV cache "
                   f"{g(self.kv_cache)} ({max_batch} x {max_seq} tokens) + margin {g(self.margin)} = "
                   f"{g(self.needed)} per GPU > {g(self.gpu_memory)}")
        if not self.weights_fit:
            return message, "the weights alone do not fit: raise hardware.tensor_parallel or quantize (fp8, nvfp4)"
        free = self.gpu_memory - self.weights - self.draft_weights - self.margin
        per_seq = self.kv_cache / max_batch
        batch = max(1, int(free // per_seq)) if per_seq else max_batch
        seq = max(16, int(free // (self.kv_cache / max_seq))) if self.kv_cache else max_seq
        return message, (f"lower serving.max_batch_size to {batch}, or serving.max_seq_len to {seq}, "
                         "or raise hardware.tensor_parallel, or quantize (fp8 halves weights and KV)")


def memory_fit(target: ModelSpec, draft: ModelSpec | None, gpu: GpuSpec, *, quantization: str, tp: int, pp: int,
               max_batch: int, max_seq: int) -> Fit:
    shards = tp * pp
    kv_dtype = 1.0 if quantization in ("fp8", "nvfp4") else 2.0
    draft_bytes = draft.weight_bytes("none") // tp if draft else 0
    return Fit(
        gpu_memory=gpu.memory_bytes,
        weights=target.weight_bytes(quantization) // shards,
        draft_weights=draft_bytes,
        kv_cache=target.kv_bytes_per_token(kv_dtype) * max_batch * max_seq // shards,
        margin=max(MARGIN_MIN, int(gpu.memory_bytes * MARGIN_FRACTION)),
        shards=shards,
    )
