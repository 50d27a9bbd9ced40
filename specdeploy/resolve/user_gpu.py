"""The figures of the GPU a valid profile names: a row of the built-in table, or its own `hardware.gpu_spec`
(specdeploy.profile.gpu has checked that exactly one of them applies)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from specdeploy.profile.gpu import TABLE_GPUS
from specdeploy.resolve.gpus import FIGURES, GPUS, GpuSpec

if TYPE_CHECKING:
    from specdeploy.profile.schema import GpuFigures, Hardware

GIB = 1024**3


def user_gpu(name: str, spec: GpuFigures, where: str) -> GpuSpec:
    """The GpuSpec of a described GPU, every figure labelled user-given; `where` is the file:line of gpu_spec."""
    given = f"user-given: hardware.gpu_spec ({where})"
    return GpuSpec(
        name,
        f"{name} (user-given)",
        int(spec.memory_gib * GIB),
        spec.memory_bandwidth_tb_s * 1e12,
        spec.bf16_tflops * 1e12,
        (spec.fp8_tflops or 0.0) * 1e12 if spec.fp8 else 0.0,
        None,
        spec.interconnect_gb_s * 1e9,
        {figure: given for figure in FIGURES[:-1]},
        user_given=True,
    )


def named_gpu(hardware: Hardware, where: str) -> GpuSpec | None:
    """The GPU a valid `hardware` section names or describes; None for `auto` (detected at build) and `cpu`."""
    if hardware.gpu_spec is not None:
        return user_gpu(hardware.gpu, hardware.gpu_spec, where)
    return GPUS[hardware.gpu] if hardware.gpu in TABLE_GPUS else None
