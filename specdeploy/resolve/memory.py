"""Memory fit, modelled on what TensorRT-LLM does with GPU memory.

TensorRT-LLM loads the weights, measures the activations of one forward, and hands
`kv_cache_config.free_gpu_memory_fraction` of what is left to a *paged* KV cache. So the question is not
whether max_batch x max_seq_len tokens fit (they rarely need to: pages go to the tokens sequences actually
hold) but how many tokens the pool holds and how many full-length sequences that serves at once. Only weights
that cannot fit at all are a certain failure; everything else is a warning with the figures.

Facts (TensorRT-LLM `tensorrt_llm/llmapi/llm_args.py`, `KvCacheConfig`; the version read is of commit
unknown): `free_gpu_memory_fraction` is the share of free GPU memory the KV cache takes, default 90 %;
`dtype` "auto" keeps the checkpoint's KV dtype, and specdeploy's PyTorch-backend YAML never sets another, so
the KV cache is costed in the model's dtype, never FP8 because the weights are; FP8 only where the emitted
commands ask for it (the engine backend's quantize.py --kv_cache_dtype fp8). MLA caches one compressed latent
per token and layer that every tensor-parallel rank holds whole (not split by TP; pipeline stages split layers).
"""

from __future__ import annotations

from dataclasses import dataclass

from specdeploy.resolve.gpus import GpuSpec
from specdeploy.resolve.model_spec import BYTES_PER_PARAM, ModelSpec

GIB = 1024**3
RESERVE_FRACTION = 0.08
"""Estimated activations, CUDA context, CUDA graphs and workspaces: 8 % of the GPU, at least RESERVE_MIN."""
RESERVE_MIN = 2 * GIB
"""What a runtime needs whatever the model (CUDA context, workspaces): weights past GPU - this never load."""


@dataclass(frozen=True)
class Fit:
    """Per-GPU memory in bytes: the fixed part (weights, drafter, reserve) and the paged KV cache in the rest."""

    gpu_memory: int
    weights: int
    draft_weights: int | None  # None: the profile names a drafter whose size is unknown
    reserve: int
    kv_fraction: float
    kv_bytes_per_token: int  # per GPU, target and known drafter
    kv_dtype: str
    max_batch: int
    max_seq: int
    shards: int

    @property
    def fixed(self) -> int:
        return self.weights + (self.draft_weights or 0) + self.reserve

    @property
    def kv_pool(self) -> int:
        return max(0, int((self.gpu_memory - self.fixed) * self.kv_fraction))

    @property
    def kv_tokens(self) -> int:
        return self.kv_pool // max(1, self.kv_bytes_per_token)

    @property
    def full_sequences(self) -> int:
        """How many max_seq_len sequences the KV pool holds at once."""
        return self.kv_tokens // self.max_seq

    @property
    def weights_fit(self) -> bool:
        """False only when failure is certain: the weights and the bare runtime exceed the GPU."""
        return self.weights + (self.draft_weights or 0) + RESERVE_MIN <= self.gpu_memory

    @property
    def fits(self) -> bool:
        return self.fixed <= self.gpu_memory and self.full_sequences >= self.max_batch

    def to_dict(self) -> dict[str, float | int | bool | str | None]:
        g = lambda b: round(b / GIB, 2)  # noqa: E731
        return {
            "gpu_memory": g(self.gpu_memory),
            "weights": g(self.weights),
            "draft_weights": "unknown" if self.draft_weights is None else g(self.draft_weights),
            "reserve": g(self.reserve),
            "kv_pool": g(self.kv_pool),
            "kv_fraction": self.kv_fraction,
            "kv_dtype": self.kv_dtype,
            "kv_bytes_per_token": self.kv_bytes_per_token,
            "kv_tokens": self.kv_tokens,
            "full_sequences": self.full_sequences,
            "max_batch": self.max_batch,
            "max_seq": self.max_seq,
            "shards": self.shards,
            "weights_fit": self.weights_fit,
            "fits": self.fits,
            "unit": "GiB",
        }

    def summary(self) -> str:
        """One line: the budget and what the KV pool holds."""
        g = lambda b: f"{b / GIB:.1f}"  # noqa: E731
        drafter = "unknown" if self.draft_weights is None else g(self.draft_weights)
        return (
            f"per GPU of {g(self.gpu_memory)} GiB: weights {g(self.weights)} + drafter {drafter} + reserve "
            f"{g(self.reserve)} (activations, CUDA context and graphs); KV cache {self.kv_fraction:.0%} of "
            f"the rest = {g(self.kv_pool)} GiB ({self.kv_dtype}) = {self.kv_tokens:,} tokens = "
            f"{self.full_sequences} sequences of {self.max_seq} at once (max_batch_size {self.max_batch})"
        )

    def problem(self) -> tuple[str, str, str] | None:
        """(severity, message, hint): an error only when the weights cannot load, else a warning, else None."""
        g = lambda b: f"{b / GIB:.1f} GiB"  # noqa: E731
        drafter = "unknown" if self.draft_weights is None else g(self.draft_weights)
        if not self.weights_fit:
            return (
                "error",
                f"does not fit: weights {g(self.weights)} + drafter {drafter} + the runtime's "
                f"{g(RESERVE_MIN)} per GPU > {g(self.gpu_memory)}",
                "raise hardware.tensor_parallel or quantize (fp8, nvfp4)",
            )
        if self.fixed > self.gpu_memory or self.kv_tokens < self.max_seq:
            return (
                "warning",
                f"may not fit: {self.summary()}; not even one {self.max_seq}-token sequence "
                "is certain to have KV pages",
                "raise hardware.tensor_parallel, quantize, or lower serving.max_seq_len",
            )
        if self.full_sequences < self.max_batch:
            return (
                "warning",
                f"KV cache is paged: {self.summary()}; beyond that, sequences wait for pages "
                "(shorter ones share the pool)",
                f"fine when sequences are shorter than max_seq_len; else "
                f"lower serving.max_batch_size to {self.full_sequences}, raise "
                "serving.kv_cache_free_gpu_memory_fraction or hardware.tensor_parallel",
            )
        return None


def kv_bytes_per_token(spec: ModelSpec, *, tp: int, pp: int, fp8: bool = False) -> int:
    """One token's KV bytes on one GPU in the model's dtype (or FP8): heads split by TP (never below one head),
    MLA's latent whole on every rank; pipeline stages split the layers."""
    dtype = 1.0 if fp8 else min(2.0, BYTES_PER_PARAM.get(spec.dtype, 2.0))  # float32 runs as float16
    total = spec.kv_bytes_per_token(dtype)
    if spec.is_mla:
        return total // pp
    return total * max(1, spec.kv_heads // tp) // max(1, spec.kv_heads) // pp


def memory_fit(
    target: ModelSpec,
    draft: ModelSpec | None,
    gpu: GpuSpec,
    *,
    quantization: str,
    tp: int,
    pp: int,
    max_batch: int,
    max_seq: int,
    kv_fraction: float = 0.9,
    has_draft: bool = False,
    kv_fp8: bool = False,
) -> Fit:
    """The fit of one profile; `has_draft` with no `draft` spec: the drafter's size is unknown; `kv_fp8`: the
    emitted commands ask for an FP8 KV cache (`trtllm.engine.fp8_kv_cache`)."""
    draft_weights = draft.weight_bytes("none") // tp if draft else (None if has_draft else 0)
    kv = kv_bytes_per_token(target, tp=tp, pp=pp, fp8=kv_fp8) + (kv_bytes_per_token(draft, tp=tp, pp=1) if draft else 0)
    return Fit(
        gpu_memory=gpu.memory_bytes,
        weights=target.weight_bytes(quantization) // (tp * pp),
        draft_weights=draft_weights,
        reserve=max(RESERVE_MIN, int(gpu.memory_bytes * RESERVE_FRACTION)),
        kv_fraction=kv_fraction,
        kv_bytes_per_token=kv,
        kv_dtype="fp8" if kv_fp8 else "float16" if target.dtype == "float32" else target.dtype,
        max_batch=max_batch,
        max_seq=max_seq,
        shards=tp * pp,
    )
