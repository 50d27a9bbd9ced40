"""The human-readable form of a plan: resolved values with their sources, facts, fit, steps, advice."""

from __future__ import annotations

from specdeploy.plan.model import Plan
from specdeploy.resolve.resolved import Resolved

GIB = 1024**3
BUILD_RECORDS = ("manifest.json", "specdeploy.lock", ".gitignore")
"""What the build writes besides its steps' files (execute/manifest.py)."""


def plan_text(resolved: Resolved, plan: Plan) -> str:
    loaded, lines = resolved.loaded, []
    lines.append(f"profile {loaded.name}  ({' <- '.join(reversed(loaded.chain))})")
    lines.append("")
    lines.append("resolved values (source):")
    for row in plan.values:
        lines.append(f"  {row['path']:<44} {row['value']!s:<30} {row['source']}")
    lines.append("")
    target = resolved.target
    if target:
        lines.append(
            f"target  {target.name}: {target.architecture}, {target.layers} layers, hidden {target.hidden}, "
            f"{target.heads}/{target.kv_heads} heads (G = {target.group_size}), vocab {target.vocab}, "
            f"context {target.context}, {target.parameter_count() / 1e9:.2f} B params"
            + (f", MoE {target.active_experts}/{target.experts}" if target.is_moe else "")
            + (", MLA" if target.is_mla else "")
            + (f", {target.mtp_layers} MTP layer(s)" if target.mtp_layers else "")
            + f"  [{target.source}]"
        )
    if resolved.draft:
        d = resolved.draft
        lines.append(
            f"drafter {d.name}: {d.architecture}, {d.layers} layer(s), hidden {d.hidden}, vocab {d.vocab}  [{d.source}]"
        )
    if resolved.gpu:
        g = resolved.gpu
        lines.append(
            f"gpu     {g.marketing_name}: {g.memory_bytes / GIB:.0f} GiB, {g.hbm_bandwidth / 1e12:.2f} TB/s, "
            f"{g.bf16_flops / 1e12:.0f} TFLOP/s bf16, ridge {g.ridge_point:.0f} FLOP/byte" + f"  [{g.source}]"
        )
    if resolved.fit:
        lines.append(f"fit     {resolved.fit.summary()}")
    lines.extend(_draft_lines(resolved))
    for note in resolved.notes:
        lines.append(f"note    {note.render()}")
    lines.append("")
    lines.append("steps:")
    lines.extend(_step_lines(plan))
    if plan.advice:
        lines.append("")
        lines.append("advice (performance model; confirm with `specdeploy tune`):")
        lines.extend(f"  {a}" for a in plan.advice)
    return "\n".join(lines)


def _draft_lines(resolved: Resolved) -> list[str]:
    """The K range (the one `tune` searches, for draft_len: auto) and the line's clamp rule."""
    ks = resolved.draft_lens
    searched = (
        f"K = {ks[0]}..{ks[-1]} (draft_len: auto; `tune` searches these)" if ks else f"up to K = {resolved.draft_len}"
    )
    from specdeploy.plugin.registry import get_engine

    product = get_engine(resolved.profile.runtime.backend).product
    line = f"; {product} line {resolved.line.name}" if resolved.line else ""
    return [
        f"draft   {searched}; max_num_tokens {resolved.max_num_tokens}{line}",
        *([f"note    {resolved.clamp_rule}"] if resolved.clamp_rule else []),
    ]


def _step_lines(plan: Plan) -> list[str]:
    """Each step, what it runs after and needs, its command, and the files it writes (build --dry-run)."""
    lines = []
    for step in plan.steps:
        after = f"  (after {', '.join(step.depends_on)})" if step.depends_on else ""
        needs = f"  [needs {', '.join(step.needs)}]" if step.needs else ""
        lines.append(f"  {step.id:<18} {step.description}{after}{needs}")
        if step.argv:
            lines.append(f"  {'':<18} $ {' '.join(step.argv)}")
        if step.outputs:
            lines.append(f"  {'':<18} writes {', '.join(step.outputs)}")
    lines.append(f"  {'':<18} (every build also writes {', '.join(BUILD_RECORDS)}, into OUT/{plan.profile_name}/)")
    return lines
