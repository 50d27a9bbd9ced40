"""Fit the efficiency factors to measured step times of any backend (GPU bench, CPU reference runtime, a server).

The free parameters are few (compute and bandwidth efficiency, per-step, per-layer and per-cached-position
overhead), so the fit is a log-spaced grid over the two efficiencies, refined by zooming, with the overheads solved
by least squares on relative error at each grid point (clipped at zero). numpy only; deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from specdeploy.errors import UsageError
from specdeploy.perfmodel.attention import TILE_ROWS
from specdeploy.perfmodel.cost import Efficiency, Work, forward_work, peak_flops, step_time
from specdeploy.resolve.gpus import FIGURES, GpuSpec
from specdeploy.resolve.model_spec import ModelSpec

OVERHEADS = ("layer_overhead_s", "step_overhead_s", "cache_overhead_s", "token_overhead_s")
"""Linear terms, in the order kept when two are collinear (one model: per layer and per step are the same column)."""
FITTABLE = ("compute", "bandwidth", *OVERHEADS)
DEFAULT_FIT = ("compute", "bandwidth", "step_overhead_s", "layer_overhead_s")
"""`cache_overhead_s` is fitted only when asked: it is 0 for paged caches, and plain-decode points at one context
cannot tell it from the GEMM terms."""


@dataclass(frozen=True)
class Measured:
    """One measured forward: B sequences x T tokens over a context of L, in seconds."""

    batch: int
    tokens: int
    context: int
    seconds: float


@dataclass(frozen=True)
class Calibration:
    gpu: GpuSpec
    eff: Efficiency
    mean_rel_err: float
    max_rel_err: float
    points: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "gpu": self.gpu.name,
            "efficiency": self.eff.to_dict(),
            "mean_rel_err": self.mean_rel_err,
            "max_rel_err": self.max_rel_err,
            "points": self.points,
        }


def pseudo_gpu(name: str = "cpu", flops: float = 1e11, bandwidth: float = 2e10) -> GpuSpec:
    """A nominal device for a backend without a datasheet row (the CPU reference runtime); calibration scales it."""
    return GpuSpec(
        name,
        f"{name} (pseudo-GPU from measured points)",
        0,
        bandwidth,
        flops,
        0.0,
        None,
        bandwidth,
        dict.fromkeys(FIGURES, "nominal; efficiency factors fitted to measured points"),
    )


def _terms(works: Sequence[Work], gpu: GpuSpec, eff: Efficiency):  # noqa: ANN202 - numpy arrays
    import numpy as np

    col = lambda f: np.array([f(w) for w in works], dtype=float)  # noqa: E731
    flops = col(lambda w: peak_flops(gpu, w.fp8))
    comm = col(
        lambda w: (
            (
                w.comm_bytes / (gpu.link_bandwidth * eff.link) + w.allreduces * eff.allreduce_latency_s
                if w.allreduces
                else 0.0
            )
            + w.alltoalls * eff.alltoall_latency_s
        )
    )
    overheads = {
        "layer_overhead_s": col(lambda w: w.layers),
        "step_overhead_s": col(lambda _: 1.0),
        "cache_overhead_s": col(lambda w: w.cache_slots),
        "token_overhead_s": col(lambda w: w.tokens),
    }
    return (
        col(lambda w: w.gemm_flops) / flops,
        col(lambda w: w.gemm_bytes) / gpu.hbm_bandwidth,
        col(lambda w: w.attention.flops) / flops,
        col(lambda w: w.attention.kv_bytes) / gpu.hbm_bandwidth,
        comm,
        overheads,
    )


def _independent(columns: dict[str, Any], fit: Sequence[str]) -> list[str]:
    """The overheads to fit, dropping any that is a linear combination of those kept before it."""
    import numpy as np

    kept: list[str] = []
    for name in (c for c in OVERHEADS if c in fit):
        scaled = [columns[k] / max(np.abs(columns[k]).max(), 1e-300) for k in (*kept, name)]
        if np.linalg.matrix_rank(np.stack(scaled, axis=1)) == len(kept) + 1:
            kept.append(name)
    return kept


def fit_works(
    works: Sequence[Work],
    seconds: Sequence[float],
    gpu: GpuSpec,
    *,
    base: Efficiency | None = None,
    fit: Sequence[str] = DEFAULT_FIT,
    rounds: int = 10,
) -> Calibration:
    """Least relative squared error over the `fit` parameters; the others keep `base`'s values."""
    import numpy as np

    base = base or Efficiency()
    if len(works) != len(seconds) or len(works) < 2:
        raise UsageError("calibration needs at least two measured points")
    if unknown := set(fit) - set(FITTABLE):
        raise UsageError(f"cannot fit {sorted(unknown)}; fittable: {', '.join(FITTABLE)}")
    y = np.asarray(seconds, dtype=float)
    gf, gb, af, ab, comm, overheads = _terms(works, gpu, base)
    cols = _independent(overheads, fit)
    design = [overheads[c] for c in cols]
    fixed = sum(getattr(base, c) * overheads[c] for c in OVERHEADS if c not in cols)
    spans = {
        k: (np.log(1e-3), np.log(10.0)) if k in fit else (np.log(getattr(base, k)),) * 2
        for k in ("compute", "bandwidth")
    }
    best: tuple[float, float, float, np.ndarray] | None = None
    for _ in range(rounds):
        ce = np.exp(np.linspace(*spans["compute"], 41))[:, None, None]
        be = np.exp(np.linspace(*spans["bandwidth"], 41))[None, :, None]
        r = np.maximum(gf / ce, gb / be) + np.maximum(af / ce, ab / be) + comm + fixed
        x = np.zeros(r.shape[:2] + (len(cols),))
        if cols:  # weighted least squares on (y - r) / y, clipped at zero
            a = np.stack(design, axis=-1) / y[:, None]
            x = np.clip(np.einsum("kn,ijn->ijk", np.linalg.pinv(a), (y - r) / y), 0.0, None)
            r = r + np.einsum("ijk,kn->ijn", x, np.stack(design))
        loss = (((r - y) / y) ** 2).mean(axis=-1)
        i, j = np.unravel_index(np.argmin(loss), loss.shape)
        best = (float(ce[i, 0, 0]), float(be[0, j, 0]), float(loss[i, j]), x[i, j])
        for key, value in (("compute", best[0]), ("bandwidth", best[1])):
            lo, hi = spans[key]
            width = (hi - lo) / 8
            spans[key] = (np.log(value) - width, np.log(value) + width) if key in fit else spans[key]
    assert best is not None
    eff = replace(base, compute=best[0], bandwidth=best[1], **{c: float(v) for c, v in zip(cols, best[3])})
    rel = np.array([abs(step_time(w, gpu, eff).total_s - s) / s for w, s in zip(works, y)])
    return Calibration(gpu, eff, float(rel.mean()), float(rel.max()), len(y))


def calibrate(
    model: ModelSpec,
    gpu: GpuSpec,
    points: Sequence[Measured],
    *,
    quantization: str = "none",
    tp: int = 1,
    lm_head: bool = True,
    base: Efficiency | None = None,
    fit: Sequence[str] = DEFAULT_FIT,
    tile_rows: int | None = TILE_ROWS,
) -> Calibration:
    """Fit `Efficiency` for one model's measured forwards on `gpu` (use `pseudo_gpu()` and `tile_rows=None` for
    the CPU)."""
    works = [
        forward_work(
            model,
            batch=p.batch,
            tokens=p.tokens,
            context=p.context,
            quantization=quantization,
            tp=tp,
            lm_head=lm_head,
            tile_rows=tile_rows,
        )
        for p in points
    ]
    return fit_works(works, [p.seconds for p in points], gpu, base=base, fit=fit)


def load_step_costs(path: str) -> tuple[str, str, list[tuple[ModelSpec, list[Measured]]]]:
    """Read a `bench/gpu/step_cost.py` JSON: (device name, dtype, [(block shape, points)])."""
    from specdeploy.boundedio import read_json

    try:
        data = read_json(path)
        shapes = [
            (
                ModelSpec(
                    s["name"],
                    "LlamaForCausalLM",
                    "llama",
                    context=0,
                    dtype=data.get("dtype", "bfloat16"),
                    source=path,
                    **s["spec"],
                ),
                [Measured(**p) for p in s["points"]],
            )
            for s in data["shapes"]
        ]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"{path} is not a step-cost JSON from bench/gpu/step_cost.py: {exc}") from exc
    return str(data.get("device", "unknown")), str(data.get("dtype", "bfloat16")), shapes


def calibrate_file(
    path: str,
    gpu: GpuSpec | None = None,
    base: Efficiency | None = None,
    fit: Sequence[str] = DEFAULT_FIT,
    gqa_packed: bool = True,
) -> Calibration:
    """Fit from a step-cost JSON, all shapes jointly (layer blocks, no LM head); the GPU comes from the file's
    device name when not given, else a pseudo-GPU. A CPU file's attention is untiled (torch's CPU SDPA kernel);
    `gqa_packed=False` charges torch SDPA's flash path its G-fold KV reads at T > 1 (attention.py)."""
    from specdeploy.resolve.gpus import gpu_from_nvml_name

    device, _, shapes = load_step_costs(path)
    gpu = gpu or gpu_from_nvml_name(device) or pseudo_gpu(device)
    tile_rows = None if device == "cpu" else TILE_ROWS
    works = [
        forward_work(
            m,
            batch=p.batch,
            tokens=p.tokens,
            context=p.context,
            lm_head=False,
            tile_rows=tile_rows,
            gqa_packed=gqa_packed,
        )
        for m, pts in shapes
        for p in pts
    ]
    return fit_works(works, [p.seconds for _, pts in shapes for p in pts], gpu, base=base, fit=fit)
