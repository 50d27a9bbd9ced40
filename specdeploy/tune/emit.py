"""Decisions per concurrency -> the canonical schedule (lower-bound map + `max_concurrency`) -> the target
TRT-LLM line's `draft_len_schedule` via `emit_schedule`, and the record that goes into `specdeploy.lock`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from specdeploy.trtllm.schedule import canonical, emit_schedule
from specdeploy.trtllm.versions import version_line
from specdeploy.tune.book import Decision


def schedule_of(decisions: Mapping[int, Decision], *, max_batch_size: int,
                trtllm_version: str | None) -> dict[str, Any]:
    """Lower bounds `{c_i: K_i}` for the tuned concurrencies; speculation stops (max_concurrency) after the last
    concurrency where it pays, and above the largest tuned concurrency (never extrapolated)."""
    cs = sorted(decisions)
    ks = [decisions[c].k for c in cs]
    notes: list[str] = []
    on = [i for i, k in enumerate(ks) if k > 0]
    if not on:
        return _off(max_batch_size, ["speculation never pays: off at every concurrency"])
    last = on[-1]
    lower: dict[int, int] = {}
    for i in range(last + 1):
        if not lower or ks[i] != list(lower.values())[-1]:
            lower[1 if i == 0 else cs[i]] = ks[i]
    max_conc = cs[last + 1] - 1 if last + 1 < len(cs) else cs[-1]
    max_conc = min(max_conc, max_batch_size)
    if last + 1 == len(cs) and cs[-1] < max_batch_size:
        notes.append(f"speculation off above {cs[-1]} (the largest tuned concurrency; not extrapolated)")
    line = version_line(trtllm_version) if trtllm_version else None
    if line is not None and max(lower.values()) > lower[1]:
        notes.append(f"TRT-LLM {line.range} needs the smallest key's K = max_draft_len: K clamped to {lower[1]} "
                     f"above concurrency 1 (tuned {lower})")
        lower = {c: min(k, lower[1]) for c, k in lower.items()}
        if not lower[1]:  # plain decoding at concurrency 1 clamps every K to 0: speculation is off
            return {**_off(max_batch_size, [*notes, "speculation off: the clamp leaves K = 0 everywhere"]),
                    "clamped": {str(c): {"tuned": decisions[c].k, "emitted": 0} for c in cs if decisions[c].k}}
    ranges = canonical(lower, max_concurrency=max_conc)
    clamped = {str(c): {"tuned": decisions[c].k, "emitted": k_at(ranges, c)} for c in cs
               if decisions[c].k != k_at(ranges, c) and c <= max_conc}
    emitted: dict[str, Any] | None = None
    if line is not None and line.schedule == "unknown":  # what trtllm.llm_api emits then: one K, no schedule
        notes.append(f"TRT-LLM {line.range} schedule semantics are UNKNOWN: no draft_len_schedule emitted, "
                     f"K = {max(lower.values())} up to max_concurrency {max_conc}")
        emitted = {"line": line.name, "range": line.range, "trtllm_version": trtllm_version, "semantics": "unknown",
                   "draft_len_schedule": {}, "max_concurrency": max_conc}
    elif line is not None:
        emitted = {"line": line.name, "range": line.range, "trtllm_version": trtllm_version,
                   "semantics": line.schedule,
                   "draft_len_schedule": {str(k): v for k, v in emit_schedule(ranges, line).items()},
                   "max_concurrency": None if line.schedule_excludes_max_concurrency else max_conc}
    return {"speculation": True, "schedule": {str(c): k for c, k in lower.items()}, "ranges": [list(r) for r in ranges],
            "max_concurrency": max_conc, "draft_len": max(lower.values()), "emitted": emitted, "notes": notes,
            "clamped": clamped}


def _off(max_batch_size: int, notes: list[str]) -> dict[str, Any]:
    return {"speculation": False, "schedule": {"1": 0}, "ranges": [[1, max_batch_size, 0]], "max_concurrency": None,
            "draft_len": 0, "emitted": None, "notes": notes, "clamped": {}}


def k_at(ranges: Sequence[Sequence[int]], concurrency: int) -> int:
    """The K a schedule (canonical `[lo, hi, K]` ranges) serves at `concurrency`: 0 outside every range."""
    return next((int(k) for lo, hi, k in ranges if lo <= concurrency <= hi), 0)


def lock_record(result: Mapping[str, Any], result_path: str) -> dict[str, Any]:
    """What `specdeploy.lock` keeps under `tuned` (the full result stays in tune/result.json)."""
    sched = result["schedule"]
    return {"format": result["format"], "backend": result["backend"],
            "evidence": result.get("evidence", "measured"), "strategy": result["strategy"],
            "draft_len": sched["draft_len"], "schedule": sched["schedule"], "ranges": sched["ranges"],
            "max_concurrency": sched["max_concurrency"], "emitted": sched["emitted"],
            "notes": sched.get("notes", []), "clamped": sched.get("clamped", {}),
            "confidence": result["confidence"]["level"], "result": result_path}
