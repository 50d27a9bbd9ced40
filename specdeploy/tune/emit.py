"""Decisions per concurrency -> the canonical schedule (lower-bound map + `max_concurrency`) -> the target
engine release's schedule (`Engine.emitted_schedule`: TRT-LLM's `draft_len_schedule`); `specdeploy.lock` keeps
it as `execute.manifest.lock_record` says."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from specdeploy.plugin.engine import Engine
from specdeploy.plugin.registry import engines
from specdeploy.schedule import canonical
from specdeploy.tune.book import Decision


def schedule_of(
    decisions: Mapping[int, Decision], *, max_batch_size: int, trtllm_version: str | None
) -> dict[str, Any]:
    """Lower bounds `{c_i: K_i}` for the tuned concurrencies; speculation stops (max_concurrency) after the last
    concurrency where it pays, and above the largest tuned concurrency (never extrapolated)."""
    cs = sorted(decisions)
    ks = [decisions[c].k for c in cs]
    notes: list[str] = []
    on = [i for i, k in enumerate(ks) if k > 0]
    if not on:
        return off_schedule(max_batch_size, ["speculation never pays: off at every concurrency"])
    last = on[-1]
    lower: dict[int, int] = {}
    for i in range(last + 1):
        if not lower or ks[i] != list(lower.values())[-1]:
            lower[1 if i == 0 else cs[i]] = ks[i]
    max_conc = cs[last + 1] - 1 if last + 1 < len(cs) else cs[-1]
    max_conc = min(max_conc, max_batch_size)
    if last + 1 == len(cs) and cs[-1] < max_batch_size:
        notes.append(f"speculation off above {cs[-1]} (the largest tuned concurrency; not extrapolated)")
    engine = _engine_of_release("trtllm_version", trtllm_version)
    if engine is not None:
        lower, clamp_notes = engine.clamp_tuned(lower, str(trtllm_version))
        notes += clamp_notes
        if not lower[1]:  # plain decoding at concurrency 1 clamps every K to 0: speculation is off
            return {
                **off_schedule(max_batch_size, [*notes, "speculation off: the clamp leaves K = 0 everywhere"]),
                "clamped": {str(c): {"tuned": decisions[c].k, "emitted": 0} for c in cs if decisions[c].k},
            }
    ranges = canonical(lower, max_concurrency=max_conc)
    clamped = {
        str(c): {"tuned": decisions[c].k, "emitted": k_at(ranges, c)}
        for c in cs
        if decisions[c].k != k_at(ranges, c) and c <= max_conc
    }
    emitted: dict[str, Any] | None = None
    if engine is not None:
        emitted, emit_notes = engine.emitted_schedule(ranges, max_conc, str(trtllm_version))
        notes += emit_notes
    return {
        "speculation": True,
        "schedule": {str(c): k for c, k in lower.items()},
        "ranges": [list(r) for r in ranges],
        "max_concurrency": max_conc,
        "draft_len": max(lower.values()),
        "emitted": emitted,
        "notes": notes,
        "clamped": clamped,
    }


def _engine_of_release(field: str, release: str | None) -> Engine | None:
    """The engine whose release field the tune recorded (it spells the tuned schedule for that release)."""
    if release is None:
        return None
    return next((e for e in engines().values() if e.version_field == field), None)


def off_schedule(max_batch_size: int, notes: list[str]) -> dict[str, Any]:
    """No speculation at any batch size, and why (`notes`)."""
    return {
        "speculation": False,
        "schedule": {"1": 0},
        "ranges": [[1, max_batch_size, 0]],
        "max_concurrency": None,
        "draft_len": 0,
        "emitted": None,
        "notes": notes,
        "clamped": {},
    }


def k_at(ranges: Sequence[Sequence[int]], concurrency: int) -> int:
    """The K a schedule (canonical `[lo, hi, K]` ranges) serves at `concurrency`: 0 outside every range."""
    return next((int(k) for lo, hi, k in ranges if lo <= concurrency <= hi), 0)
