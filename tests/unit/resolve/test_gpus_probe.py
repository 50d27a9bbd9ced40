"""GPU table facts and the NVML probe on a machine without a driver."""

from __future__ import annotations

import pytest

from specdeploy.profile.gpu import TABLE_GPUS
from specdeploy.profile.topology import NODE_GPUS
from specdeploy.resolve.gpus import FIGURES, GPUS, gpu_from_nvml_name
from specdeploy.resolve.probe import probe_nvml


def test_h200_ridge_point() -> None:
    assert GPUS["h200"].ridge_point == pytest.approx(206, rel=0.01)


@pytest.mark.parametrize(
    "nvml, key",
    [
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),
        ("NVIDIA H100 PCIe", "h100-pcie"),
        ("NVIDIA H200", "h200"),
        ("NVIDIA A100-SXM4-80GB", "a100-80gb"),
        ("NVIDIA L40S", "l40s"),
        ("NVIDIA L4", "l4"),
        ("NVIDIA B200", "b200"),
        ("NVIDIA H20", "h20"),
        ("NVIDIA H200 NVL", "h200"),
    ],
)
def test_nvml_names(nvml: str, key: str) -> None:
    spec = gpu_from_nvml_name(nvml)
    assert spec is not None and spec.name == key


def test_every_figure_of_every_row_names_the_page_and_row_it_was_read_from() -> None:
    for gpu in GPUS.values():
        assert set(gpu.sources) == set(FIGURES) and not gpu.user_given, gpu.name
        for figure, source in gpu.sources.items():
            datasheet = source.startswith("https://") and " § " in source and ": " in source.split(" § ", 1)[1]
            assert datasheet or (gpu.name == "h20" and source.startswith("UNCONFIRMED")), (gpu.name, figure, source)


def test_hardware_gpu_names_exactly_the_rows_with_a_datasheet() -> None:
    """The profile layer's name list (it cannot import this table) and the node sizes agree with the rows."""
    confirmed = [name for name, gpu in GPUS.items() if not any("UNCONFIRMED" in s for s in gpu.sources.values())]
    assert list(TABLE_GPUS) == confirmed and set(NODE_GPUS) == set(TABLE_GPUS)


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
