"""What a mechanism declares for vLLM: the value of its `Mechanism.engines["vllm"]` entry.

A mechanism module is the one place its vLLM facts live: vLLM's `method` literal, whether `model` carries a drafter,
how its options map onto `SpeculativeConfig` fields, which options vLLM has no counterpart for, and the release
lines that have the method. Facts cite `vllm/config/speculative.py @ v0.32.0` (the 0.32 contract table's
`speculative` source).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Drafter = Literal["required", "optional", "none"]


@dataclass(frozen=True)
class VllmMethod:
    method: str
    """vLLM's `method` literal."""
    drafter: Drafter
    """`required`: `model` is the drafter; `optional`: the drafter, else vLLM uses the target's own weights;
    `none`: the method takes no model."""
    fields: Mapping[str, str] = field(default_factory=dict)
    """Option name -> SpeculativeConfig field it sets."""
    ignored: Mapping[str, str] = field(default_factory=dict)
    """Options with no vLLM counterpart -> why they can be left out (TensorRT-LLM build or pool settings)."""
    refused: Mapping[str, tuple[Any, str]] = field(default_factory=dict)
    """Options vLLM cannot honour unless they keep this value -> (that value, why)."""
    fixed: Mapping[str, Any] = field(default_factory=dict)
    """SpeculativeConfig fields the mechanism always sets, whatever its options (a third party's fixed matching)."""
    note: str = ""
    no_schedule: str = ""
    """Why the method cannot take a per-batch-size schedule ("" when it can): a tuned schedule is then emitted as
    one K at every batch size, with a note saying this."""
    lines: tuple[str, ...] = ("0.32",)
    """The vLLM release lines whose contract table has the method (`Mechanism.supported` reads them)."""


TRT_POOL = "a TensorRT-LLM n-gram pool setting; vLLM's n-gram proposer keeps no pool"
"""Why TensorRT-LLM's n-gram pool options have no vLLM counterpart (n-gram and its third-party cousins)."""


def method_of(mechanism: str) -> VllmMethod | None:
    """What the named mechanism declares for vLLM (None: nothing, or an unknown name)."""
    from specdeploy.plugin.registry import find

    cls = find(mechanism) if mechanism not in ("none", "auto") else None
    found = cls.engines.get("vllm") if cls is not None else None
    return found if isinstance(found, VllmMethod) else None
