"""GPU spec table: the numbers the fit check and the performance model start from.

Dense (not sparse) tensor throughput. Sources are the vendor datasheets named per row; B200 figures
are per GPU of an HGX/DGX B200 (1,440 GB / 8 usable memory).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GpuSpec:
    """One GPU model; bandwidths in bytes/s, throughputs in FLOP/s."""

    name: str
    marketing_name: str
    memory_bytes: int
    hbm_bandwidth: float
    bf16_flops: float
    fp8_flops: float
    sms: int
    compute_capability: tuple[int, int]
    link_bandwidth: float
    source: str

    @property
    def ridge_point(self) -> float:
        """FLOP per byte above which a dense bf16 GEMM is compute-bound (guideline 1)."""
        return self.bf16_flops / self.hbm_bandwidth

    @property
    def sm_arch(self) -> str:
        major, minor = self.compute_capability
        return f"sm_{major}{minor}"


GB = 1e9
TB = 1e12
_GIB = 1024**3

GPUS: dict[str, GpuSpec] = {
    g.name: g
    for g in (
        GpuSpec(
            "h200",
            "NVIDIA H200 SXM",
            141 * 10**9,
            4.8 * TB,
            989 * TB,
            1979 * TB,
            132,
            (9, 0),
            900 * GB,
            "nvidia.com/en-us/data-center/h200 (datasheet: 141 GB HBM3e, 4.8 TB/s, 989 TFLOPS BF16 dense)",
        ),
        GpuSpec(
            "h100-sxm",
            "NVIDIA H100 SXM5 80GB",
            80 * _GIB,
            3.35 * TB,
            989 * TB,
            1979 * TB,
            132,
            (9, 0),
            900 * GB,
            "nvidia.com/en-us/data-center/h100 (datasheet: 3.35 TB/s, 989 TFLOPS BF16 dense)",
        ),
        GpuSpec(
            "h100-pcie",
            "NVIDIA H100 PCIe 80GB",
            80 * _GIB,
            2.0 * TB,
            756 * TB,
            1513 * TB,
            114,
            (9, 0),
            64 * GB,
            "nvidia.com/en-us/data-center/h100 (datasheet: 2 TB/s, 756 TFLOPS BF16 dense, PCIe Gen5)",
        ),
        GpuSpec(
            "h20",
            "NVIDIA H20",
            96 * _GIB,
            4.0 * TB,
            148 * TB,
            296 * TB,
            78,
            (9, 0),
            900 * GB,
            "UNCONFIRMED: NVIDIA publishes no H20 datasheet; third-party spec sheets (willitrunai.com/gpus/h20-96gb: "
            "96 GB HBM3, 4.0 TB/s, 148 TFLOPS FP16 dense, 296 INT8 TOPS, NVLink 900 GB/s; Geekbench: 78 SMs); FP8 "
            "taken as the INT8 rate, as on every Hopper datasheet (H100 SXM: 1,979 both)",
        ),
        GpuSpec(
            "b200",
            "NVIDIA B200",
            180 * 10**9,
            8.0 * TB,
            2250 * TB,
            4500 * TB,
            148,
            (10, 0),
            1800 * GB,
            "nvidia.com/en-us/data-center/dgx-b200 (1,440 GB, 64 TB/s per 8 GPUs); HGX B200 sparse figures halved",
        ),
        GpuSpec(
            "a100-80gb",
            "NVIDIA A100 SXM4 80GB",
            80 * _GIB,
            2.039 * TB,
            312 * TB,
            0.0,
            108,
            (8, 0),
            600 * GB,
            "nvidia.com/en-us/data-center/a100 (datasheet: 2,039 GB/s, 312 TFLOPS BF16 dense, no FP8)",
        ),
        GpuSpec(
            "a100-40gb",
            "NVIDIA A100 SXM4 40GB",
            40 * _GIB,
            1.555 * TB,
            312 * TB,
            0.0,
            108,
            (8, 0),
            600 * GB,
            "nvidia.com/en-us/data-center/a100 (datasheet: 1,555 GB/s, 312 TFLOPS BF16 dense)",
        ),
        GpuSpec(
            "l40s",
            "NVIDIA L40S",
            48 * _GIB,
            0.864 * TB,
            362 * TB,
            733 * TB,
            142,
            (8, 9),
            32 * GB,
            "nvidia.com/en-us/data-center/l40s (datasheet: 864 GB/s, 362 TFLOPS BF16 dense, 733 FP8 dense)",
        ),
        GpuSpec(
            "l4",
            "NVIDIA L4",
            24 * _GIB,
            0.300 * TB,
            121 * TB,
            242 * TB,
            58,
            (8, 9),
            32 * GB,
            "nvidia.com/en-us/data-center/l4 (datasheet: 300 GB/s, 121 TFLOPS BF16 dense, 242 FP8 dense)",
        ),
    )
}

_NVML_NAMES = (
    ("h200", "h200"),
    ("h100 pcie", "h100-pcie"),
    ("h100", "h100-sxm"),
    ("h20", "h20"),  # after h200 ("nvidia h200" contains "h20"); the 141 GB H20 variant maps here too
    ("b200", "b200"),
    ("a100-sxm4-80gb", "a100-80gb"),
    ("a100 80gb", "a100-80gb"),
    ("a100", "a100-40gb"),
    ("l40s", "l40s"),
    ("l4", "l4"),
)


def gpu_from_nvml_name(nvml_name: str) -> GpuSpec | None:
    """Map an NVML device name (e.g. 'NVIDIA H100 80GB HBM3') to the table, or None if unknown."""
    lowered = nvml_name.lower()
    if "h100" in lowered and "pcie" not in lowered:
        return GPUS["h100-sxm"]
    for needle, key in _NVML_NAMES:
        if needle in lowered:
            return GPUS[key]
    return None
