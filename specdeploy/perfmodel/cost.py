"""One forward's cost: GEMM roofline, attention, MoE expert reads, TP all-reduce, fixed and KV-cache overheads.

`forward_work` counts the work (FLOPs, bytes) of B sequences x T tokens over a context of L; `step_time` turns
work into seconds with a GPU's datasheet peaks scaled by calibratable `Efficiency` factors. The split lets
`calibrate` fit the factors without recounting work.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from specdeploy.perfmodel.attention import TILE_ROWS, AttentionWork, attention_work
from specdeploy.resolve.gpus import GpuSpec
from specdeploy.resolve.model_spec import BYTES_PER_PARAM, ModelSpec

FP8_COMPUTE = ("fp8", "int8_sq", "nvfp4")
"""Quantizations whose GEMMs run on the FP8 (or faster) tensor cores; weight-only 4-bit computes in BF16."""


@dataclass(frozen=True)
class Efficiency:
    """Fractions of datasheet peaks reached, plus fixed costs. Defaults are uncalibrated priors for a GPU
    running CUDA graphs; `calibrate` fits them from measured points."""

    compute: float = 0.7
    bandwidth: float = 0.8
    step_overhead_s: float = 50e-6
    """Per forward: launch, sampling, scheduler."""
    layer_overhead_s: float = 0.0
    """Per layer per forward: kernel launches / Python dispatch (dominant on the CPU reference runtime)."""
    cache_overhead_s: float = 0.0
    """Per cached position per sequence per layer, per forward: a KV cache grown by concatenation (transformers'
    DynamicCache, the reference runtime) is copied whole on every forward, a cost in B x L that the new-token
    count T does not change; 0 for caches written in place (paged KV in the GPU serving engines)."""
    link: float = 0.7
    allreduce_latency_s: float = 8e-6
    """Per TP all-reduce (two per layer): the latency floor NCCL/one-shot kernels pay whatever the bytes."""
    alltoall_latency_s: float = 0.0
    """Per MoE layer under expert parallelism (EP > 1): dispatch + combine latency."""
    token_overhead_s: float = 0.0
    """Per token a forward processes (B x T): logits, sampling/acceptance, per-token kernels and scheduler work that
    no roofline term sees; what makes verification cost grow with batch on dense targets."""
    draft_pass_s: float = 0.0
    """Per sequential drafter pass (drafters.py): the launch, sampling and hidden-state hand-off of one draft step."""

    def to_dict(self) -> dict[str, float]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Efficiency:
        return cls(**{k: float(v) for k, v in data.items() if k in cls.__dataclass_fields__})


@dataclass(frozen=True)
class Work:
    """What one forward does on one GPU of its TP group."""

    gemm_flops: float
    gemm_bytes: float
    attention: AttentionWork
    comm_bytes: float
    allreduces: int
    layers: int
    fp8: bool
    cache_slots: float
    """Cached positions x sequences x layers (what `cache_overhead_s` is charged per)."""
    tokens: int = 0
    """B x T: what `token_overhead_s` is charged per."""
    alltoalls: int = 0
    """MoE layers under EP > 1: what `alltoall_latency_s` is charged per."""


@dataclass(frozen=True)
class StepCost:
    """Seconds of one forward, by part; `bound` says which side of the GEMM roofline it sits on."""

    gemm_s: float
    attention_s: float
    comm_s: float
    overhead_s: float
    bound: str
    work: Work = field(repr=False)

    @property
    def total_s(self) -> float:
        return self.gemm_s + self.attention_s + self.comm_s + self.overhead_s

    def to_dict(self) -> dict[str, Any]:
        return {
            "gemm_s": self.gemm_s,
            "attention_s": self.attention_s,
            "comm_s": self.comm_s,
            "overhead_s": self.overhead_s,
            "total_s": self.total_s,
            "bound": self.bound,
        }


def experts_touched(experts: int, active: int, tokens: int) -> float:
    """Expected distinct experts a layer reads for `tokens` tokens: E (1 - (1 - k/E)^tokens)."""
    return experts * (1.0 - (1.0 - active / experts) ** tokens) if experts else 0.0


def _act_bytes(model: ModelSpec) -> float:
    return 4.0 if model.dtype == "float32" else 2.0


def forward_work(
    model: ModelSpec,
    *,
    batch: int,
    tokens: int,
    context: int,
    quantization: str = "none",
    tp: int = 1,
    lm_head: bool = True,
    lm_vocab: int | None = None,
    tile_rows: int | None = TILE_ROWS,
    ep: int = 1,
    gqa_packed: bool = True,
) -> Work:
    """Work of one forward over B x T tokens; `lm_vocab` overrides the head width (EAGLE-3's draft vocabulary);
    `tile_rows` is the attention kernel's query tile (None: untiled, as on the CPU); `ep` > 1 adds an all-to-all
    per MoE layer; `gqa_packed=False` is a kernel that packs the G query heads of a KV head only at T = 1 (torch
    SDPA's flash path: the H200 grid's proxy, attention.py)."""
    m = batch * tokens
    h = model.hidden
    bpp = BYTES_PER_PARAM[model.dtype if quantization == "none" else quantization]
    moe_layers = model.layers - model.dense_layers if model.is_moe else 0
    dense_layers = model.layers - moe_layers
    dense_mlp = 3 * h * model.intermediate
    active_per_moe = 3 * h * model.moe_intermediate * (model.active_experts + model.shared_experts) + h * model.experts
    touched = experts_touched(model.experts, model.active_experts, m)
    read_per_moe = 3 * h * model.moe_intermediate * (touched + model.shared_experts) + h * model.experts
    vocab = (lm_vocab or model.vocab) if lm_head else 0
    active = (
        model.layers * model.attention_params() + dense_layers * dense_mlp + moe_layers * active_per_moe + h * vocab
    )
    read = model.layers * model.attention_params() + dense_layers * dense_mlp + moe_layers * read_per_moe + h * vocab
    ffn_width = dense_layers * model.intermediate + moe_layers * model.moe_intermediate * (
        model.active_experts + model.shared_experts
    )
    act = _act_bytes(model) * m * (model.layers * 6 * h + 3 * ffn_width + vocab)
    allreduces = 2 * model.layers if tp > 1 else 0
    comm = allreduces * 2 * (tp - 1) / tp * m * h * _act_bytes(model) if tp > 1 else 0.0
    return Work(
        gemm_flops=2.0 * m * active / tp,
        gemm_bytes=(read * bpp + act) / tp,
        attention=attention_work(
            model, batch=batch, tokens=tokens, context=context, tp=tp, tile_rows=tile_rows, gqa_packed=gqa_packed
        ),
        comm_bytes=comm,
        allreduces=allreduces,
        layers=model.layers,
        fp8=quantization in FP8_COMPUTE or (quantization == "none" and model.dtype == "fp8"),
        cache_slots=float(batch * context * model.layers),
        tokens=m,
        alltoalls=moe_layers if ep > 1 else 0,
    )


def peak_flops(gpu: GpuSpec, fp8: bool) -> float:
    return gpu.fp8_flops if fp8 and gpu.fp8_flops else gpu.bf16_flops


def step_time(work: Work, gpu: GpuSpec, eff: Efficiency) -> StepCost:
    """Roofline per part: max(compute, memory) for GEMMs and for attention, plus link time and overheads."""
    flops = peak_flops(gpu, work.fp8) * eff.compute
    bandwidth = gpu.hbm_bandwidth * eff.bandwidth
    compute_s, memory_s = work.gemm_flops / flops, work.gemm_bytes / bandwidth
    attention_s = max(work.attention.flops / flops, work.attention.kv_bytes / bandwidth)
    comm_s = (
        work.comm_bytes / (gpu.link_bandwidth * eff.link) + work.allreduces * eff.allreduce_latency_s
        if work.allreduces
        else 0.0
    )
    comm_s += work.alltoalls * eff.alltoall_latency_s
    overhead_s = (
        eff.step_overhead_s
        + work.layers * eff.layer_overhead_s
        + work.cache_slots * eff.cache_overhead_s
        + work.tokens * eff.token_overhead_s
    )
    return StepCost(
        max(compute_s, memory_s),
        attention_s,
        comm_s,
        overhead_s,
        "compute" if compute_s >= memory_s else "memory",
        work,
    )


def forward_cost(
    model: ModelSpec,
    gpu: GpuSpec,
    *,
    batch: int,
    tokens: int,
    context: int,
    quantization: str = "none",
    tp: int = 1,
    eff: Efficiency | None = None,
    lm_head: bool = True,
    tile_rows: int | None = TILE_ROWS,
    ep: int = 1,
) -> StepCost:
    """Seconds of one target forward (a verification step when tokens = K + 1)."""
    work = forward_work(
        model,
        batch=batch,
        tokens=tokens,
        context=context,
        quantization=quantization,
        tp=tp,
        lm_head=lm_head,
        tile_rows=tile_rows,
        ep=ep,
    )
    return step_time(work, gpu, eff or Efficiency())


def ridge_tokens(
    model: ModelSpec, gpu: GpuSpec, *, quantization: str = "none", tp: int = 1, eff: Efficiency | None = None
) -> int:
    """Guideline 1: the fewest tokens per forward (B x (K + 1)) at which the GEMMs turn compute-bound.

    For a dense bf16 model this is about the GPU's ridge point (FLOP/byte) times bytes per parameter / 2.
    """
    eff = eff or Efficiency()
    lo, hi = 1, 1
    while (
        step_time(forward_work(model, batch=hi, tokens=1, context=0, quantization=quantization, tp=tp), gpu, eff).bound
        == "memory"
    ):
        lo, hi = hi, hi * 2
        if hi > 1 << 22:
            return hi
    while lo < hi:
        mid = (lo + hi) // 2
        work = forward_work(model, batch=mid, tokens=1, context=0, quantization=quantization, tp=tp)
        lo, hi = (mid + 1, hi) if step_time(work, gpu, eff).bound == "memory" else (lo, mid)
    return lo
