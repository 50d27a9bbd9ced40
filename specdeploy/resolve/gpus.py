"""GPU spec table: the numbers the fit check and the performance model start from.

Dense (not sparse) tensor throughput: NVIDIA's tables print the sparse figure (marked *), halved here. Every
figure of every row names the public page, section and row it was read from (`GpuSpec.sources`); a GPU the table
lacks is described in the profile (`hardware.gpu_spec`, `specdeploy.resolve.user_gpu`) and labelled user-given.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

FIGURES = ("memory", "bandwidth", "bf16", "fp8", "link", "compute_capability")
"""The figures each row cites a source for (`GpuSpec.sources`)."""


@dataclass(frozen=True)
class GpuSpec:
    """One GPU model; bandwidths in bytes/s, throughputs in FLOP/s (fp8_flops 0: no FP8 tensor cores)."""

    name: str
    marketing_name: str
    memory_bytes: int
    hbm_bandwidth: float
    bf16_flops: float
    fp8_flops: float
    compute_capability: tuple[int, int] | None
    link_bandwidth: float
    sources: Mapping[str, str]
    """figure (FIGURES) -> where it was read: page, section, row as printed."""
    user_given: bool = False
    """The figures came from the profile (`hardware.gpu_spec`), not from this table."""

    @property
    def ridge_point(self) -> float:
        """FLOP per byte above which a dense bf16 GEMM is compute-bound (guideline 1)."""
        return self.bf16_flops / self.hbm_bandwidth

    @property
    def sm_arch(self) -> str:
        if self.compute_capability is None:
            return "unknown"
        major, minor = self.compute_capability
        return f"sm_{major}{minor}"

    @property
    def source(self) -> str:
        """One line saying where the figures come from (plan prints it beside them)."""
        pages = dict.fromkeys(s.split(" § ")[0] for s in self.sources.values())
        return "; ".join(pages)


GB = 1e9
TB = 1e12
_GIB = 1024**3

DC = "https://www.nvidia.com/en-us/data-center"
CUDA_GPUS = "https://developer.nvidia.com/cuda-gpus § CUDA-Enabled Datacenter Products"
H100_SHEET = (
    "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet § Technical Specifications"
)
A100_SHEET = (
    "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
    "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf § NVIDIA A100 Tensor Core GPU Specifications"
)
SPARSE = "(* with sparsity: halved)"


def _cited(page: str, column: str, cc: str, **rows: str) -> dict[str, str]:
    """Each figure's source: `page § section, column: the row as printed`; the compute capability from CUDA's
    table."""
    return {
        **{figure: f"{page}, {column}: {row}" for figure, row in rows.items()},
        "compute_capability": f"{CUDA_GPUS}: {cc}",
    }


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
            (9, 0),
            900 * GB,
            _cited(
                f"{DC}/h200/ § Specifications",
                "H200 SXM",
                "H200 9.0",
                memory="GPU Memory 141GB",
                bandwidth="GPU Memory Bandwidth 4.8TB/s",
                bf16=f"BFLOAT16 Tensor Core 1,979 TFLOPS* {SPARSE}",
                fp8=f"FP8 Tensor Core 3,958 TFLOPS* {SPARSE}",
                link="Interconnect NVIDIA NVLink 900GB/s",
            ),
        ),
        GpuSpec(
            "h100-sxm",
            "NVIDIA H100 SXM5 80GB",
            80 * _GIB,
            3.35 * TB,
            989 * TB,
            1979 * TB,
            (9, 0),
            900 * GB,
            _cited(
                f"{DC}/h100/ § Specifications",
                "H100 SXM",
                "H100 9.0",
                memory="GPU Memory 80GB",
                bandwidth="GPU Memory Bandwidth 3.35TB/s",
                bf16=f"BFLOAT16 Tensor Core 1,979 teraFLOPS* {SPARSE}",
                fp8=f"FP8 Tensor Core 3,958 teraFLOPS* {SPARSE}",
                link="Interconnect NVIDIA NVLink 900GB/s",
            ),
        ),
        GpuSpec(
            "h100-pcie",
            "NVIDIA H100 PCIe 80GB",
            80 * _GIB,
            2.0 * TB,
            756 * TB,
            1513 * TB,
            (9, 0),
            64 * GB,
            _cited(
                H100_SHEET,
                "H100 PCIe",
                "H100 9.0",
                memory="GPU Memory 80GB",
                bandwidth="GPU Memory Bandwidth 2TB/s",
                bf16=f"BFLOAT16 Tensor Core 1,513 teraFLOPS* {SPARSE}",
                fp8=f"FP8 Tensor Core 3,026 teraFLOPS* {SPARSE}",
                link="Interconnect PCIe Gen5 128GB/s (both directions: 64GB/s each way)",
            ),
        ),
        GpuSpec(
            "h20",
            "NVIDIA H20",
            96 * _GIB,
            4.0 * TB,
            148 * TB,
            296 * TB,
            (9, 0),
            900 * GB,
            {
                f: "UNCONFIRMED: NVIDIA publishes no H20 datasheet; https://willitrunai.com/gpus/h20-96gb (a third "
                "party: 96 GB HBM3, 4.0 TB/s, 148 TFLOPS FP16 dense, 296 INT8 TOPS, NVLink 900 GB/s); FP8 taken "
                "as the INT8 rate, as on every Hopper datasheet"
                for f in FIGURES[:-1]
            }
            | {"compute_capability": f"{CUDA_GPUS}: H20 9.0 (Hopper)"},
        ),
        GpuSpec(
            "b200",
            "NVIDIA B200",
            180 * 10**9,
            8.0 * TB,
            2250 * TB,
            4500 * TB,
            (10, 0),
            1800 * GB,
            {
                **_cited(
                    f"{DC}/dgx-b200/ § Specifications",
                    "DGX B200 (8 GPUs: divided by 8)",
                    "B200 10.0",
                    memory="GPU Memory 1,440GB total",
                    bandwidth="HBM3e 64TB/s",
                    link="NVLink Bandwidth 14.4TB/s aggregate",
                ),
                **_cited(
                    f"{DC}/hgx/ § Specifications",
                    "HGX B200 (8 GPUs: divided by 8)",
                    "B200 10.0",
                    bf16=f"FP16/BF16 36 PFLOPS* {SPARSE}",
                    fp8=f"FP8/FP6 72 PFLOPS* {SPARSE}",
                ),
            },
        ),
        GpuSpec(
            "a100-80gb",
            "NVIDIA A100 SXM4 80GB",
            80 * _GIB,
            2.039 * TB,
            312 * TB,
            0.0,
            (8, 0),
            600 * GB,
            _cited(
                f"{DC}/a100/ § Specifications",
                "A100 80GB SXM",
                "A100 8.0",
                memory="GPU Memory 80GB HBM2e",
                bandwidth="GPU Memory Bandwidth 2,039GB/s",
                bf16="BFLOAT16 Tensor Core 312 TFLOPS (dense)",
                fp8="no FP8 row (Ampere has no FP8 tensor cores)",
                link="Interconnect NVIDIA NVLink 600GB/s",
            ),
        ),
        GpuSpec(
            "a100-40gb",
            "NVIDIA A100 SXM4 40GB",
            40 * _GIB,
            1.555 * TB,
            312 * TB,
            0.0,
            (8, 0),
            600 * GB,
            _cited(
                A100_SHEET,
                "A100 40GB SXM",
                "A100 8.0",
                memory="GPU Memory 40GB HBM2",
                bandwidth="GPU Memory Bandwidth 1,555GB/s",
                bf16="BFLOAT16 Tensor Core 312 TFLOPS (dense)",
                fp8="no FP8 row (Ampere has no FP8 tensor cores)",
                link="Interconnect NVIDIA NVLink 600GB/s",
            ),
        ),
        GpuSpec(
            "l40s",
            "NVIDIA L40S",
            48 * _GIB,
            0.864 * TB,
            362 * TB,
            733 * TB,
            (8, 9),
            32 * GB,
            _cited(
                f"{DC}/l40s/ § Specifications",
                "L40S",
                "L40S 8.9",
                memory="GPU Memory 48GB GDDR6 with ECC",
                bandwidth="Memory Bandwidth 864GB/s",
                bf16="BF16 Tensor Core 362.05 TFLOPS (dense column)",
                fp8="FP8 Tensor Core 733 TFLOPS (dense column)",
                link="Interconnect Interface PCIe Gen4 x16: 64GB/s bidirectional (32GB/s each way)",
            ),
        ),
        GpuSpec(
            "l4",
            "NVIDIA L4",
            24 * _GIB,
            0.300 * TB,
            121 * TB,
            242 * TB,
            (8, 9),
            32 * GB,
            _cited(
                f"{DC}/l4/ § Specifications",
                "L4",
                "L4 8.9",
                memory="GPU memory 24GB",
                bandwidth="GPU memory bandwidth 300GB/s",
                bf16=f"BF16 Tensor Core 242 teraFLOPS* {SPARSE}",
                fp8=f"FP8 Tensor Core 485 teraFLOPS* {SPARSE}",
                link="Interconnect PCIe Gen4 x16 64GB/s (both directions: 32GB/s each way)",
            ),
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
