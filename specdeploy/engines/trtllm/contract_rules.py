"""The cross-field validators of a release range's speculative config, transcribed (not copied) from the
upstream model validators each range's `VersionLine.sources` names. Input: the `rules` dict that
`tables.table_for` attaches; output: one message per violated rule, as TorchLlmArgs would refuse it."""

from __future__ import annotations

from typing import Any

POSITIVE_K = ("Eagle", "Eagle3", "NGram", "DraftTarget", "Draft_Target", "SA")
"""Decoding types whose validator requires max_draft_len > 0 (EagleDecodingConfig, NGram, DraftTarget, SA)."""


def _effective_k(spec: dict[str, Any], rules: dict[str, Any]) -> Any:
    if spec.get("decoding_type") == "MTP" and rules.get("mtp_overwrites_max_draft_len"):
        return spec.get("num_nextn_predict_layers", 1)
    return spec.get("max_draft_len")


def _schedule(spec: dict[str, Any], rules: dict[str, Any]) -> list[str]:
    raw = spec.get("draft_len_schedule")
    if raw is None:
        return []
    where = "speculative_config.draft_len_schedule"
    if rules.get("schedule") == "unknown":
        return [f"{where}: how this release reads a schedule is UNKNOWN ({', '.join(rules.get('unknown', ()))})"]
    schedule = {int(b): int(k) for b, k in raw.items()}
    if not schedule or min(schedule) < 1 or min(schedule.values()) < 0:
        return [f"{where}: batch sizes must be >= 1 and draft lengths >= 0, got {raw}"]
    k = _effective_k(spec, rules)
    first = min(schedule)
    if rules.get("schedule_key_one_required") and 1 not in schedule:
        return [f"{where}: must include batch_size=1"]
    problems = []
    if k is not None and schedule[first] != k:
        problems.append(
            f"{where}[{first}] must equal max_draft_len {k} (smallest batch-size key), got {schedule[first]}"
        )
    if k is not None and max(schedule.values()) > k:
        problems.append(f"{where}: every draft length must be <= max_draft_len {k}, got {raw}")
    if rules.get("schedule_excludes_max_concurrency") and spec.get("max_concurrency") is not None:
        problems.append("speculative_config: max_concurrency and draft_len_schedule are mutually exclusive")
    return problems


def rule_problems(spec: dict[str, Any], rules: dict[str, Any]) -> list[str]:
    """The range's cross-field rules on one speculative_config."""
    dtype = spec.get("decoding_type")
    problems = _schedule(spec, rules)
    if dtype in POSITIVE_K and not (isinstance(spec.get("max_draft_len"), int) and spec["max_draft_len"] > 0):
        problems.append(f"speculative_config.max_draft_len must be > 0 for {dtype}")
    if dtype == "MTP" and rules.get("mtp_overwrites_max_draft_len") and "max_draft_len" in spec:
        n = spec.get("num_nextn_predict_layers", 1)
        if spec["max_draft_len"] != n:
            problems.append(
                f"speculative_config.max_draft_len {spec['max_draft_len']} is overwritten by "
                f"num_nextn_predict_layers ({n}) on this release: set both to K"
            )
    topk = spec.get("dynamic_tree_max_topK")
    if (
        dtype in ("Eagle", "Eagle3")
        and spec.get("use_dynamic_tree")
        and rules.get("dynamic_tree_needs_topk")
        and not (isinstance(topk, int) and topk > 0)
    ):
        problems.append("speculative_config.use_dynamic_tree needs dynamic_tree_max_topK > 0")
    two_model = rules.get("eagle3_two_model", "supported")
    if dtype in ("Eagle", "Eagle3") and spec.get("eagle3_one_model") is False and two_model in ("refused", "unknown"):
        problems.append(
            f"speculative_config.eagle3_one_model: false (two-model EAGLE-3) is {two_model} on this "
            "release; use the one-model path"
        )
    return problems
