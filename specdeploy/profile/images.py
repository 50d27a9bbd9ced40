"""NVIDIA's Triton + TensorRT-LLM images (`nvcr.io/nvidia/tritonserver:<yy.mm>-trtllm-python-py3`) by the
TensorRT-LLM release they ship, each row with where it was read.

A release with no row is UNKNOWN: the Dockerfile is refused until the profile names `deploy.image`.
"""

from __future__ import annotations

from dataclasses import dataclass

REPOSITORY = "nvcr.io/nvidia/tritonserver"
_MATRIX = (
    "triton-inference-server/server docs/introduction/compatibility.md "
    "(commit 0f963c9a8c6913aa4cd9b57ee04f9c2b76ee8d2a), 'Container Name: trtllm-python-py3'"
)


@dataclass(frozen=True)
class TritonImage:
    """One published image and the TensorRT-LLM release inside it."""

    release: str
    """Triton's `yy.mm`."""
    trtllm_version: str
    source: str

    @property
    def ref(self) -> str:
        return f"{REPOSITORY}:{self.release}-trtllm-python-py3"


IMAGES: tuple[TritonImage, ...] = (
    TritonImage("26.07", "1.2.1", _MATRIX),
    TritonImage("26.06", "1.2.1", _MATRIX),
    TritonImage("26.05", "1.2.1", _MATRIX),
    TritonImage("26.04", "1.2.1", _MATRIX),
    TritonImage("26.03", "1.2.0", _MATRIX),
    TritonImage("26.02", "1.1.0", _MATRIX),
    TritonImage("26.01", "1.1.0", _MATRIX),
    TritonImage("25.12", "1.1.0", _MATRIX),
)
"""Newest first. The 1.3 line: UNKNOWN (no trtllm-python-py3 row names it in that matrix)."""


def image_for(trtllm_version: str) -> TritonImage | None:
    """The newest published image that ships exactly this TensorRT-LLM release, or None (UNKNOWN)."""
    return next((image for image in IMAGES if image.trtllm_version == trtllm_version), None)


def known_releases() -> list[str]:
    """TensorRT-LLM releases some image ships, for error hints."""
    return sorted({image.trtllm_version for image in IMAGES})
