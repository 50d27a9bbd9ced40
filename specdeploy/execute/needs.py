"""What a step `needs` (`tensorrt_llm`, `gpu`) checked before it runs, with how to get it."""

from __future__ import annotations

import importlib.util
from importlib.metadata import PackageNotFoundError, version

from specdeploy.errors import MissingDependency
from specdeploy.plan.model import Step
from specdeploy.resolve.resolved import Resolved


def install_hint(trtllm_version: str) -> str:
    return (
        f"pip install tensorrt_llm=={trtllm_version} --extra-index-url https://pypi.nvidia.com "
        f"(Linux with CUDA; PyPI alone holds only a stub), or run inside the NGC image "
        f"nvcr.io/nvidia/tensorrt-llm/release:{trtllm_version}"
    )


def installed_trtllm() -> str | None:
    """The installed TensorRT-LLM version, found without importing it (its import initialises CUDA/MPI)."""
    if importlib.util.find_spec("tensorrt_llm") is None:
        return None
    try:
        return version("tensorrt_llm")
    except PackageNotFoundError:
        return None


def check_needs(step: Step, resolved: Resolved) -> None:
    """Raise MissingDependency (exit 1 for that step; dependents are skipped) when a need is unmet."""
    wanted = resolved.profile.runtime.trtllm_version
    if "tensorrt_llm" in step.needs and installed_trtllm() is None:
        raise MissingDependency(
            f"step {step.id} needs TensorRT-LLM {wanted}, which is not installed here", hint=install_hint(wanted)
        )
    if "gpu" in step.needs:
        from specdeploy.resolve.probe import probe_nvml

        names, _, _, error = probe_nvml()
        if not names:
            raise MissingDependency(
                f"step {step.id} needs an NVIDIA GPU: {error or 'none found'}",
                hint="run this build on a GPU machine (everything else is cached and reused)",
            )
