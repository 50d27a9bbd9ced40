"""What a profile's `trtllm_version` range refuses before anything is emitted (validate's `contract` rule):
the same upstream rules `contract_rules` checks on emitted options, said at the profile's own keys."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from specdeploy.issues import Issue

if TYPE_CHECKING:
    from specdeploy.plugin.base import CheckContext


def contract_issues(ctx: CheckContext, _mech: Any = None) -> Iterator[Issue]:
    """A mechanism the range lacks, a range nobody read; schedules the range cannot express."""
    line, spec = ctx.line, ctx.profile.speculative
    if line is None:
        return
    version = ctx.profile.runtime.trtllm_version
    from specdeploy.engines.trtllm.declare import decoding_of
    from specdeploy.engines.trtllm.versions import ONE_MODEL_K, UNCONFIRMED, WHOLE_RANGE

    for key in (k for k in line.unknown if k in WHOLE_RANGE):  # the whole range is unread (1.4)
        yield Issue(
            ("runtime", "trtllm_version"),
            f"TensorRT-LLM {version}: range {line.range}, UNKNOWN: {UNCONFIRMED[key]}",
            "pin a release whose contract was read (1.2.1, the 1.3 line), or "
            "check the emitted options with tools/refresh_trtllm_tables.py",
            severity="warning",
        )

    declared = decoding_of(spec.mechanism)  # a mechanism without a declaration: its `support` governs it
    if declared is not None and not declared.has(line):
        yield Issue(
            ("speculative", "mechanism"),
            f"{spec.mechanism} is not in TensorRT-LLM {version} (range "
            f"{line.range}): specdeploy emits it for {declared.releases()} (see specdeploy mechanisms)",
            f"pin runtime.trtllm_version to {declared.releases()}",
        )
        return
    if declared is not None and ctx.options is not None:
        refused = declared.refusal(ctx.options, line)  # a plugin's declared refusal: located, never a traceback
        if refused is not None:
            yield refused
    if spec.schedule and spec.mechanism != "none":
        if line.schedule == "unknown":
            yield Issue(
                ("speculative", "schedule"),
                f"how TensorRT-LLM {version} reads draft_len_schedule is "
                f"UNKNOWN (range {line.range}; see specdeploy.engines.trtllm.versions.UNCONFIRMED)",
                "pin runtime.trtllm_version: 1.3.0rc8 or later (or 1.3.0rc2, or 1.2.x), or drop the schedule",
            )
        elif spec.schedule[min(spec.schedule)] != max(spec.schedule.values()):
            yield Issue(
                ("speculative", "schedule"),
                f"TensorRT-LLM {version} needs the smallest batch key's draft "
                f"length to equal max_draft_len (the largest K); got {dict(spec.schedule)}",
                "start the schedule with its largest K",
            )
    scheduled = spec.schedule or spec.draft_len == "auto"  # auto: the tune emits a schedule
    if declared is not None and spec.mechanism != "none" and scheduled and declared.one_model(ctx.options, line):
        yield Issue(
            ("speculative", "schedule" if spec.schedule else "draft_len"),
            f"{spec.mechanism} runs one-model here: {ONE_MODEL_K}; the emitted schedule is not what serves",
            "pin speculative.draft_len to one K (the tune's at your concurrency), or run two-model where the "
            "mechanism has it (EAGLE-3: options.one_model: false)",
            severity="warning",
        )


PREQUANTIZED = (
    "TensorRT-LLM's PyTorch backend quantizes nothing: it runs checkpoints already quantized with Model "
    "Optimizer (https://nvidia.github.io/TensorRT-LLM/1.2.1/features/quantization.html, 'Running "
    "Pre-quantized Models')"
)


def quantization_issues(ctx: CheckContext) -> Iterator[Issue]:
    """`target.quantization` must be what the checkpoint loads as: the memory fit, the KV cache and the tuning
    figures rest on it, and nothing on this backend converts one into the other."""
    target, want = ctx.target, ctx.profile.target.quantization
    if target is None or want == target.quantization:
        return
    model, have = ctx.profile.target.model, target.quantization
    if have.startswith("other:"):
        yield Issue(
            ("target", "quantization"),
            f"{model} is quantized as {have[6:]} (its quantization_config), a format specdeploy cannot plan for",
            "use a Model-Optimizer checkpoint (fp8, nvfp4, int4_awq, w4a8_awq, int8_sq) or an unquantized one",
        )
        return
    world = ctx.profile.hardware.tensor_parallel * ctx.profile.hardware.pipeline_parallel
    loads = target.weight_bytes(have) / world / 1024**3
    planned = target.weight_bytes(want) / world / 1024**3
    if have == "none":
        yield Issue(
            ("target", "quantization"),
            f"{model} is not quantized (its config.json has no "
            f"quantization_config): it loads in {target.dtype}, {loads:.1f} GiB of weights a GPU, not the "
            f"{planned:.1f} GiB planned for {want}. {PREQUANTIZED}",
            f"name a {want} checkpoint as target.model (a Model-Optimizer export, e.g. from its "
            f"examples/llm_ptq --quant {want}), or set target.quantization: none",
        )
    else:
        yield Issue(
            ("target", "quantization"),
            f"{model} is a {have} checkpoint (its quantization_config): it "
            f"loads as {have}, {loads:.1f} GiB of weights a GPU, not {planned:.1f} GiB as {want}",
            f"set target.quantization: {have}",
        )
