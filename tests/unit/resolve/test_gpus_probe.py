"""GPU table facts and the NVML probe on a machine without a driver."""

from __future__ import annotations

import pytest

from specdeploy.resolve.gpus import GPUS, gpu_from_nvml_name
from specdeploy.resolve.probe import probe_nvml


def test_h200_ridge_point() -> None:
    assert GPUS["h200"].ridge_point == pytest.approx(206, rel=0.01)


@pytest.mark.parametrize("nvml, key", [("NVIDIA H100 80GB HBM3", "h100-sxm"), ("NVIDIA H100 PCIe", "h100-pcie"),
                                       ("NVIDIA H200", "h200"), ("NVIDIA A100-SXM4-80GB", "a100-80gb"),
                                       ("NVIDIA L40S", "l40s"), ("NVIDIA L4", "l4"), ("NVIDIA B200", "b200"),
                                       ("NVIDIA H20", "h20"), ("NVIDIA H200 NVL", "h200")])
def test_nvml_names(nvml: str, key: str) -> None:
    spec = gpu_from_nvml_name(nvml)
    assert spec is not None and spec.name == key


def test_every_gpu_cites_a_source() -> None:
    assert all(g.source and g.memory_bytes and g.hbm_bandwidth for g in GPUS.values())


def test_probe_says_plainly_when_no_driver() -> None:
    pynvml = pytest.importorskip("pynvml")
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError_LibraryNotFound:
        pass
    else:
        pynvml.nvmlShutdown()
        pytest.skip("this machine has an NVIDIA driver")
    names, _, _, error = probe_nvml()
    assert names == () and error == "no NVIDIA driver found (NVML library not found)"
