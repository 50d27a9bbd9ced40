"""Which GPU a profile means: `hardware.gpu` names it, and for a GPU the built-in table lacks, `hardware.gpu_spec`
gives its figures. So exactly one of them says what the GPU is: a table name takes no gpu_spec, any other name
needs one, and `auto` / `cpu` take none. Checked on the merged data beside the schema, so these errors come with
the schema's, all at once.
"""

from __future__ import annotations

from difflib import get_close_matches
from typing import Any

from specdeploy.issues import Issue
from specdeploy.profile.checks import gpu_name

TABLE_GPUS = ("h200", "h100-sxm", "h100-pcie", "b200", "a100-80gb", "a100-40gb", "l40s", "l4")
"""What `hardware.gpu` may name without a gpu_spec: the rows of specdeploy.resolve.gpus with a datasheet (a test
holds the two equal). H20's row has no NVIDIA datasheet: `gpu: auto` detects it, or describe it in gpu_spec."""
SPEC_KEYS = "memory_gib, memory_bandwidth_tb_s, bf16_tflops, fp8, fp8_tflops, interconnect_gb_s"


def gpu_issues(hardware: Any) -> list[Issue]:
    """Every error in how `hardware.gpu` and `hardware.gpu_spec` (the merged, unvalidated mapping) together say
    which GPU this is; a value of the wrong type is the schema's to report."""
    if not isinstance(hardware, dict):
        return []
    name, spec = hardware.get("gpu", "auto"), hardware.get("gpu_spec")
    if not _a_name(name):
        return []
    if spec is None:
        return [] if name in ("auto", "cpu", *TABLE_GPUS) else [_unknown(name)]
    if not isinstance(spec, dict):
        return []
    issues = []
    if name in ("auto", "cpu"):
        issues.append(
            Issue(
                ("hardware", "gpu"),
                f"gpu: {name} cannot be the GPU hardware.gpu_spec describes",
                "name it (e.g. gpu: rtx-4090), or remove hardware.gpu_spec",
            )
        )
    elif name in TABLE_GPUS:
        issues.append(
            Issue(
                ("hardware", "gpu_spec"),
                f"'{name}' is in the built-in GPU table, which gives its "
                "figures; gpu_spec describes a GPU the table lacks",
                f"remove hardware.gpu_spec, or give this GPU a name of its own (e.g. {name}-custom)",
            )
        )
    fp8, tflops = spec.get("fp8"), spec.get("fp8_tflops")
    if fp8 is True and tflops is None:
        issues.append(
            Issue(
                ("hardware", "gpu_spec", "fp8"),
                "fp8: true needs fp8_tflops, the dense FP8 TFLOP/s",
                "set hardware.gpu_spec.fp8_tflops, or fp8: false",
            )
        )
    elif fp8 is False and tflops is not None:
        issues.append(
            Issue(
                ("hardware", "gpu_spec", "fp8_tflops"),
                "fp8_tflops is given but fp8 is false",
                "set hardware.gpu_spec.fp8: true, or remove fp8_tflops",
            )
        )
    return issues


def _a_name(value: Any) -> bool:
    """A well-formed `hardware.gpu` (the schema reports anything else)."""
    try:
        return isinstance(value, str) and gpu_name(value) == value
    except ValueError:
        return False


def _unknown(name: str) -> Issue:
    lowered = name.lower()
    close = [g for g in TABLE_GPUS if g.startswith(lowered)] or get_close_matches(lowered, TABLE_GPUS, n=1)
    guess = f"did you mean {' or '.join(repr(c) for c in close)}? Otherwise d" if close else "d"
    return Issue(
        ("hardware", "gpu"),
        f"specdeploy has no datasheet figures for GPU '{name}' (its table: {', '.join(TABLE_GPUS)})",
        f"{guess}escribe it under hardware.gpu_spec ({SPEC_KEYS})",
    )
