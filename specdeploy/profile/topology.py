"""How TP x PP ranks map onto nodes and pods, and the deploy checks `validate` runs.

TensorRT-LLM's Triton LLM-API backend spans nodes with `trtllm-llmapi-launch` over MPI, and does not split
one tensor-parallel group across nodes ("inter-node tensor parallelism is not supported. Use pipeline
parallelism for multi-node deployments": triton-inference-server/tensorrtllm_backend docs/llmapi.md, commit
c75a081d8207a89050fecb3681eee2db402fcef9; the same text in NVIDIA/TensorRT-LLM's LLM-API backend guide).
So a multi-node group fills whole nodes and each TP group stays inside one.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from specdeploy.issues import Issue
from specdeploy.plugin.registry import get_engine, layout_named

if TYPE_CHECKING:
    from specdeploy.profile.schema import Profile

NODE_GPUS: dict[str, tuple[int, str]] = {
    "h200": (8, "NVIDIA-H200"),
    "h100-sxm": (8, "NVIDIA-H100-80GB-HBM3"),
    "h100-pcie": (8, "NVIDIA-H100-PCIe"),
    "b200": (8, "NVIDIA-B200"),
    "a100-80gb": (8, "NVIDIA-A100-SXM4-80GB"),
    "a100-40gb": (8, "NVIDIA-A100-SXM4-40GB"),
    "l40s": (8, "NVIDIA-L40S"),
    "l4": (8, "NVIDIA-L4"),
}
"""GPU -> (GPUs of one HGX/DGX-class node, GPU Feature Discovery's `nvidia.com/gpu.product` label).

Node sizes: the 8-GPU HGX/DGX boards of the datasheets named in specdeploy/resolve/gpus.py; PCIe and L-series
servers vary (set deploy.gpus_per_node). Labels: GFD writes the NVML device name with '-' for spaces
(seen as NVIDIA-H200, NVIDIA-H100-80GB-HBM3, NVIDIA-A100-SXM4-40GB, NVIDIA-B200 in NVIDIA's own manifests);
the others are UNCONFIRMED spellings: set deploy.kubernetes.gpu_product to your nodes' label."""


@dataclass(frozen=True)
class Topology:
    """World size, nodes, and GPUs per pod (one pod per node)."""

    world: int
    node_gpus: int
    tensor_parallel: int
    pipeline_parallel: int

    @property
    def nodes(self) -> int:
        return -(-self.world // self.node_gpus)  # whole nodes: topology_issues refused any remainder

    @property
    def pod_gpus(self) -> int:
        return self.node_gpus if self.multi_node else self.world

    @property
    def multi_node(self) -> bool:
        return self.world > self.node_gpus


def node_gpus(profile: Profile) -> int | None:
    """deploy.gpus_per_node, else the GPU table's node size; None when the GPU is not named."""
    if profile.deploy.gpus_per_node is not None:
        return int(profile.deploy.gpus_per_node)
    return NODE_GPUS[profile.hardware.gpu][0] if profile.hardware.gpu in NODE_GPUS else None


def gpu_product(profile: Profile) -> str | None:
    kube = profile.deploy.kubernetes
    if kube.gpu_product is not None:
        return str(kube.gpu_product)
    return NODE_GPUS[profile.hardware.gpu][1] if profile.hardware.gpu in NODE_GPUS else None


def deploy_name(profile: Profile, profile_name: str) -> str:
    """deploy.name, else the profile's name made a DNS-1123 label."""
    if profile.deploy.name:
        return str(profile.deploy.name)
    name = re.sub(r"[^a-z0-9-]+", "-", profile_name.lower()).strip("-")[:63].strip("-")
    return name or "specdeploy"


def topology_issues(profile: Profile, targets: list[str] | tuple[str, ...]) -> Iterator[Issue]:
    """Every reason these targets cannot be rendered for this profile (located at the field to change)."""
    if not targets:
        return
    name = profile.triton.layout
    layout = layout_named(get_engine(profile.runtime.backend).layouts[0] if name == "auto" else name)
    if layout is None or not layout.portable:
        yield Issue(
            ("deploy", "targets"),
            f"deploy targets serve the llmapi Triton layout (PyTorch backend); this "
            f"profile uses the {profile.runtime.backend} backend, whose repository names build-machine paths",
            "set runtime.backend: pytorch, or remove deploy.targets",
        )
    from specdeploy.profile.images import image_for, known_releases

    if "container" in targets and profile.deploy.image is None and image_for(profile.runtime.trtllm_version) is None:
        yield Issue(
            ("runtime", "trtllm_version"),
            f"no published Triton + TensorRT-LLM image is known to ship "
            f"TensorRT-LLM {profile.runtime.trtllm_version} (known: {', '.join(known_releases())})",
            "set deploy.image to the image you serve it with",
        )
    if not {"k8s", "slurm"} & set(targets):
        return
    size = node_gpus(profile)
    if size is None:
        yield Issue(
            ("deploy", "gpus_per_node"),
            f"the node size of hardware.gpu '{profile.hardware.gpu}' is unknown",
            "set deploy.gpus_per_node (or name the GPU in hardware.gpu)",
        )
        return
    hw = profile.hardware
    world = hw.tensor_parallel * hw.pipeline_parallel
    if world <= size:
        return
    if world % size:
        yield Issue(
            ("hardware", "pipeline_parallel"),
            f"tensor_parallel x pipeline_parallel = {world} GPUs do not fill whole nodes of {size} GPUs",
            f"use a multiple of {size} (or deploy.gpus_per_node)",
        )
    if hw.tensor_parallel > size or size % hw.tensor_parallel:
        yield Issue(
            ("hardware", "tensor_parallel"),
            f"tensor_parallel {hw.tensor_parallel} does not fit inside "
            f"one node of {size} GPUs: TensorRT-LLM's Triton LLM-API backend runs no tensor-parallel "
            "group across nodes",
            f"use tensor_parallel: {size} and pipeline_parallel: {world // size}"
            if world % size == 0
            else f"use a tensor_parallel that divides {size}",
        )


def topology(profile: Profile) -> Topology:
    """The Topology of a profile that passed topology_issues."""
    hw = profile.hardware
    size = node_gpus(profile) or hw.tensor_parallel * hw.pipeline_parallel
    return Topology(hw.tensor_parallel * hw.pipeline_parallel, size, hw.tensor_parallel, hw.pipeline_parallel)
