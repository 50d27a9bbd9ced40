"""EnvironmentProbe: what this machine has (GPUs via NVML, TRT-LLM, tritonserver), probed once.

Only `build`, `tune` and `doctor` probe; `validate` and `plan` never import pynvml.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import ClassVar

from specdeploy.resolve.gpus import GpuSpec, gpu_from_nvml_name


@dataclass(frozen=True)
class EnvironmentProbe:
    """Facts about the local machine; tests build one by hand instead of probing."""

    gpu_names: tuple[str, ...] = ()
    gpu_memory_bytes: tuple[int, ...] = ()
    driver: str | None = None
    nvml_error: str | None = None
    trtllm_version: str | None = None
    tritonserver: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def gpu_count(self) -> int:
        return len(self.gpu_names)

    def gpu_spec(self) -> GpuSpec | None:
        return gpu_from_nvml_name(self.gpu_names[0]) if self.gpu_names else None


@dataclass(frozen=True)
class DoctorReport:
    """What `doctor` says about this machine. `missing` lists what a GPU build needs and this machine lacks;
    CPU-only use (the reference runtime) needs none of it."""

    schema_version: ClassVar[int] = 1
    specdeploy: str
    python: str
    gpus: list[dict[str, str | float]]
    """{"name", "memory_gib"} per GPU NVML sees."""
    driver: str
    nvml: str
    engines: dict[str, str]
    """Each installed engine's lines (`Engine.doctor`), in the report beside the others."""
    tritonserver: str
    triton_python_stub: str
    missing: list[str]

    def entries(self) -> dict[str, object]:
        """The report's lines, in the order doctor prints them."""
        return {
            "specdeploy": self.specdeploy,
            "python": self.python,
            "gpus": self.gpus,
            "driver": self.driver,
            "nvml": self.nvml,
            **self.engines,
            "tritonserver": self.tritonserver,
            "triton_python_stub": self.triton_python_stub,
            "gpu_builds": "ready" if not self.missing else "not on this machine",
            "missing": self.missing,
        }

    def to_dict(self) -> dict[str, object]:
        return {"schema_version": self.schema_version, **self.entries()}


def _package_version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def probe_nvml() -> tuple[tuple[str, ...], tuple[int, ...], str | None, str | None]:
    """(names, memory, driver, error) from NVML; the error says plainly when no driver is present."""
    try:
        import pynvml
    except ImportError:
        return (), (), None, "nvidia-ml-py is not installed"
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError_LibraryNotFound:
        return (), (), None, "no NVIDIA driver found (NVML library not found)"
    except pynvml.NVMLError as exc:
        return (), (), None, f"NVML failed: {exc}"
    try:
        driver = pynvml.nvmlSystemGetDriverVersion()
        names, memory = [], []
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            name = pynvml.nvmlDeviceGetName(handle)
            names.append(name.decode() if isinstance(name, bytes) else name)
            memory.append(int(pynvml.nvmlDeviceGetMemoryInfo(handle).total))
        return tuple(names), tuple(memory), driver if isinstance(driver, str) else driver.decode(), None
    finally:
        pynvml.nvmlShutdown()


def probe_environment() -> EnvironmentProbe:
    names, memory, driver, error = probe_nvml()
    from specdeploy.runtime_paths import tritonserver_binary

    server = tritonserver_binary()
    return EnvironmentProbe(
        gpu_names=names,
        gpu_memory_bytes=memory,
        driver=driver,
        nvml_error=error,
        trtllm_version=_package_version("tensorrt_llm") or _package_version("tensorrt-llm"),
        tritonserver=str(server) if server else shutil.which("tritonserver"),
    )
