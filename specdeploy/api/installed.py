"""What this machine and the installed plugins offer: `doctor` and the `mechanisms` matrix."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from specdeploy.plugin.matrix import MatrixRow
    from specdeploy.resolve.probe import DoctorReport


def doctor() -> DoctorReport:
    """Versions and what this machine can do: NVML/GPUs, each engine, tritonserver, the Triton Python stub."""
    import platform

    from specdeploy import __version__
    from specdeploy.plugin.registry import engines
    from specdeploy.render.backends import stub_report
    from specdeploy.resolve.probe import DoctorReport, probe_environment

    probe = probe_environment()
    found: dict[str, str] = {}
    lacking: list[str] = []
    for engine in engines().values():
        lines, needs = engine.doctor(probe)
        found.update(lines)
        lacking += needs
    missing = [
        *([] if probe.driver else ["NVIDIA driver"]),
        *([] if probe.gpu_names else ["NVIDIA GPU"]),
        *dict.fromkeys(lacking),
    ]
    return DoctorReport(
        specdeploy=__version__,
        python=platform.python_version(),
        gpus=[
            {"name": n, "memory_gib": round(m / 1024**3, 1)}
            for n, m in zip(probe.gpu_names, probe.gpu_memory_bytes, strict=True)
        ],
        driver=probe.driver or "no NVIDIA driver",
        nvml=probe.nvml_error or "ok",
        engines=found,
        tritonserver=probe.tritonserver or "not found (pip install 'specdeploy[triton]')",
        triton_python_stub=stub_report(),
        missing=missing,
    )


def mechanisms() -> list[MatrixRow]:
    """The mechanism x backend x version matrix, from the installed plugins."""
    from specdeploy.plugin.matrix import matrix

    return matrix()
