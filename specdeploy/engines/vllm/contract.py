"""vLLM release lines: which contract table covers a vLLM release, and the facts in it.

A *line* is a minor release (`0.32`): one table per line in `tables/vllm-<line>.json`, every fact in it naming
its upstream file at the release tag (`sources`) and saying how the table was read (`read`). A release no table
covers is refused rather than guessed at.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

TABLES = Path(__file__).resolve().parent / "tables"
Range = tuple[int, int, int]


@dataclass(frozen=True)
class ReleaseLine:
    """What one vLLM minor release accepts in `--speculative-config` and on `vllm serve`'s command line."""

    name: str
    releases: str
    read: Mapping[str, str]
    sources: Mapping[str, str]
    methods: tuple[str, ...]
    fields: Mapping[str, Mapping[str, Any]]
    """SpeculativeConfig fields specdeploy emits: type, rule, default, source key."""
    mtp_model_types: tuple[str, ...]
    schedule_field: str | None
    """The per-batch-size schedule's field; None where the release has no schedule (one K for all batches)."""
    serve_args: Mapping[str, Mapping[str, Any]]
    """Long option name (no `--`) -> flag, type, source key: the `vllm serve` arguments specdeploy emits."""
    serve_command: tuple[str, ...]
    config_file: Mapping[str, str]
    error_phrases: Mapping[str, str]
    """A phrase of vLLM's refusal -> the speculative-config field it is about (when the message names none)."""
    error_hints: Mapping[str, str]
    """A phrase of vLLM's refusal -> what the user can do about it (vLLM's own message says where it failed)."""

    def cite(self, key: str) -> str:
        """The upstream file at the release tag that a fact's `source` key names."""
        return self.sources[key]

    def has_method(self, method: str) -> bool:
        return method in self.methods


def _load(path: Path) -> ReleaseLine:
    raw = json.loads(path.read_text())
    spec, schedule, serve = raw["speculative_config"], raw.get("schedule"), raw["serve"]
    return ReleaseLine(
        name=raw["line"],
        releases=raw["releases"],
        read=raw["read"],
        sources=raw["sources"],
        methods=tuple(spec["methods"]),
        fields=spec["fields"],
        mtp_model_types=tuple(spec["mtp_model_types"]),
        schedule_field=schedule["field"] if schedule else None,
        serve_args=serve["args"],
        serve_command=tuple(serve["command"]),
        config_file=serve["config_file"],
        error_phrases=raw.get("errors", {}).get("phrases", {}),
        error_hints=raw.get("errors", {}).get("hints", {}),
    )


@lru_cache(maxsize=1)
def lines() -> dict[str, ReleaseLine]:
    """Every shipped line, by name."""
    return {line.name: line for line in map(_load, sorted(TABLES.glob("vllm-*.json")))}


def line_for(version: str) -> ReleaseLine:
    """The line of a release (`0.32.0`, `0.32.1.dev3+cpu` -> `0.32`); ValueError for a release no table covers."""
    match = re.match(r"^v?(\d+)\.(\d+)(?:\.|$)", version.strip())
    known = lines()
    name = f"{match.group(1)}.{match.group(2)}" if match else None
    if name not in known:
        raise ValueError(
            f"specdeploy has no vLLM contract for {version!r}; it covers "
            + ", ".join(
                f"{line.releases} ({line.read['distribution']} {line.read['version']} read)" for line in known.values()
            )
        )
    return known[str(name)]


def check_schedule(ranges: Sequence[Sequence[int]], line: ReleaseLine) -> list[Range]:
    """The rules `build_dynamic_sd_schedule_lookup` applies when vLLM's scheduler starts, applied before anything
    launches (create_engine_config does not check a schedule): 3-item inclusive ranges, positive bounds, start
    <= end, K >= 0, no overlap, the first range at batch 1."""
    if line.schedule_field is None:
        raise ValueError(f"vLLM {line.releases} has no per-batch-size schedule")
    where = line.cite("dynamic")
    out: list[Range] = []
    for entry in ranges:
        if len(entry) != 3:
            raise ValueError(f"a schedule entry is (range_start, range_end, K), not {list(entry)} ({where})")
        start, end, k = (int(v) for v in entry)
        if start <= 0 or end <= 0 or start > end or k < 0:
            raise ValueError(
                f"schedule entry {[start, end, k]}: vLLM needs 0 < range_start <= range_end and K >= 0 ({where})"
            )
        out.append((start, end, k))
    out.sort()
    if not out or out[0][0] != 1:
        raise ValueError(f"the first batch-size range must start at 1 ({where})")
    for (_, end, _), (start, _, _) in zip(out, out[1:]):
        if start <= end:
            raise ValueError(f"batch-size ranges overlap at {start} ({where})")
    return out
