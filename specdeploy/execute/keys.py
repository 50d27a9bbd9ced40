"""Cache keys: sha256 over named components, so a rebuild can say which input changed."""

from __future__ import annotations

from typing import Any

from specdeploy.execute.hashing import canonical_hash
from specdeploy.plan.model import Stage, Step


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """`{"serving": {"max_batch_size": 64}}` -> `{"serving.max_batch_size": 64}`."""
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(flatten(item, f"{prefix}{key}."))
        return out
    return {prefix.rstrip("."): value}


PROFILE_PARTS = frozenset({"step definition", "profile", "TensorRT-LLM version", "GPU arch"})
"""The key's parts that the profile decides (the others: the code, the checkpoint bytes, this machine)."""
OUTPUT_OF = "output of "


def components(
    step: Step,
    *,
    profile: dict[str, Any],
    deps: dict[str, dict[str, Any]],
    fingerprint: dict[str, Any] | None,
    code: str,
    trtllm: str | None,
    gpu: str | None,
) -> dict[str, str]:
    """Named hashes that make up a step's key (fetch steps do not depend on the rest of the profile)."""
    definition = {k: v for k, v in step.to_dict().items() if k != "description"}
    parts = {
        "step definition": canonical_hash(definition),
        "code": code,
        "TensorRT-LLM version": canonical_hash(trtllm),
        "GPU arch": canonical_hash(gpu),
    }
    if step.stage != Stage.FETCH:
        parts["profile"] = canonical_hash(profile)
    for dep_id, outputs in sorted(deps.items()):
        parts[f"{OUTPUT_OF}{dep_id}"] = canonical_hash(outputs)
    if fingerprint is not None:
        parts["checkpoint files"] = canonical_hash(fingerprint)
    return parts


def cache_key(parts: dict[str, str]) -> str:
    return canonical_hash(parts)


def rebuild_reason(
    old: dict[str, Any], parts: dict[str, str], profile: dict[str, Any], fingerprint: dict[str, Any] | None = None
) -> str:
    """Name what changed between the stamp and now, e.g. `profile serving.max_batch_size changed`."""
    old_parts: dict[str, str] = old.get("components", {})
    changed = sorted(k for k in set(old_parts) | set(parts) if old_parts.get(k) != parts.get(k))
    reasons = []
    for name in changed:
        if name == "profile":
            before, now = old.get("profile", {}), flatten(profile)
            keys = sorted(k for k in set(before) | set(now) if before.get(k) != now.get(k))
            reasons.append(
                f"profile {', '.join(keys[:3]) + (' ...' if len(keys) > 3 else '')} changed"
                if keys
                else "profile changed"
            )
        elif name == "checkpoint files":
            reasons.append(_files_reason(old.get("fingerprint") or {}, fingerprint or {}))
        else:
            reasons.append(f"{name} changed")
    return "; ".join(reasons) or "inputs changed"


def _files_reason(old: dict[str, Any], new: dict[str, Any]) -> str:
    before, now = old.get("files") or {}, new.get("files") or {}
    names = sorted(k for k in set(before) | set(now) if before.get(k) != now.get(k))
    if names:
        return f"checkpoint file {', '.join(names[:3])}{' ...' if len(names) > 3 else ''} changed"
    if old.get("commit") != new.get("commit"):
        return f"checkpoint revision changed ({str(old.get('commit'))[:12]} -> {str(new.get('commit'))[:12]})"
    return "checkpoint changed"
