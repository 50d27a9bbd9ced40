"""What a profile's `trtllm_version` range refuses before anything is emitted (validate's `contract` rule):
the same upstream rules `contract_rules` checks on emitted options, said at the profile's own keys."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from specdeploy.profile.issues import Issue

if TYPE_CHECKING:
    from specdeploy.plugin.base import CheckContext


def _option(ctx: CheckContext, name: str, default: Any) -> Any:
    return getattr(ctx.options, name, default) if ctx.options is not None else default


def contract_issues(ctx: CheckContext, _mech: Any = None) -> Iterator[Issue]:
    """EAGLE-3 two-model where the range refuses or deprecates it; schedules the range cannot express."""
    line, spec = ctx.line, ctx.profile.speculative
    if line is None:
        return
    version = ctx.profile.runtime.trtllm_version
    from specdeploy.engines.trtllm.versions import CONCERNS, RANGES, UNCONFIRMED

    for key in (k for k in line.unknown if CONCERNS.get(k) == ("*",)):  # the whole range is unread (1.4)
        yield Issue(("runtime", "trtllm_version"), f"TensorRT-LLM {version}: range {line.range}, UNKNOWN: "
                    f"{UNCONFIRMED[key]}", "pin a release whose contract was read (1.2.1, the 1.3 line), or "
                    "check the emitted options with tools/refresh_trtllm_tables.py", severity="warning")

    builtin = any(r.supports(spec.mechanism) for r in RANGES)  # a third-party mechanism's `support` governs it
    if spec.mechanism != "none" and builtin and not line.supports(spec.mechanism):
        yield Issue(("speculative", "mechanism"), f"{spec.mechanism} is not in TensorRT-LLM {version} (range "
                    f"{line.range}; see specdeploy mechanisms)", "pin a later runtime.trtllm_version")
        return
    if spec.mechanism == "eagle3" and not _option(ctx, "one_model", True):
        if line.eagle3_two_model in ("refused", "unknown"):
            yield Issue(("speculative", "options", "one_model"),
                        f"two-model EAGLE-3 is {line.eagle3_two_model} on TensorRT-LLM {version} (range "
                        f"{line.range}: {line.sources.get('eagle3_two_model', 'UNKNOWN')})",
                        "set options.one_model: true, or pin runtime.trtllm_version: 1.3.0rc23 or 1.2.1")
        elif line.eagle3_two_model == "deprecated":
            yield Issue(("speculative", "options", "one_model"), f"two-model EAGLE-3 is deprecated on TensorRT-LLM "
                        f"{version} (removed from 1.3.0rc27)", "set options.one_model: true", severity="warning")
    if spec.schedule and spec.mechanism != "none":
        if line.schedule == "unknown":
            yield Issue(("speculative", "schedule"), f"how TensorRT-LLM {version} reads draft_len_schedule is "
                        f"UNKNOWN (range {line.range}; see specdeploy.engines.trtllm.versions.UNCONFIRMED)",
                        "pin runtime.trtllm_version: 1.3.0rc14 or later (or 1.2.1), or drop the schedule")
        elif spec.schedule[min(spec.schedule)] != max(spec.schedule.values()):
            yield Issue(("speculative", "schedule"), f"TensorRT-LLM {version} needs the smallest batch key's draft "
                        f"length to equal max_draft_len (the largest K); got {dict(spec.schedule)}",
                        "start the schedule with its largest K")
