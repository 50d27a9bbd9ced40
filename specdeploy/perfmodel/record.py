"""The published record (data/published.json) and the benchmark's error bands (data/bands.json).

The record is data: rows transcribed from papers, vendor blogs and engine docs with the settings each source
states, split into a calibration and a held-out half by source. `bench/perfmodel_published.py` fits the engine
profiles on the calibration half and writes the error bands `plan` and `tune --backend model` quote.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from specdeploy.errors import UsageError

DATA = Path(__file__).with_name("data")
RECORD = DATA / "published.json"
BANDS = DATA / "bands.json"
ACCEPTANCE = DATA / "acceptance.json"
SPLITS = ("calibration", "held-out")
REQUIRED = ("id", "source", "section", "mechanism", "metric", "not_stated")
RESULTS = ("speedup", "spec_tps", "al")


def validate(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows, checked: known source with a split, the required keys, unique ids, at least one figure each."""
    sources, rows, seen = data.get("sources", {}), data.get("rows", []), set()
    for name, src in sources.items():
        if src.get("split") not in SPLITS or not src.get("where"):
            raise UsageError(f"{RECORD.name}: source {name} needs a split in {SPLITS} and a `where`")
    for row in rows:
        missing = [k for k in REQUIRED if k not in row]
        if missing or row["source"] not in sources or row["id"] in seen:
            raise UsageError(
                f"{RECORD.name}: row {row.get('id')} is malformed (missing {missing}, unknown source or duplicate id)"
            )
        if all(row.get(k) is None for k in RESULTS):
            raise UsageError(f"{RECORD.name}: row {row['id']} carries no published figure")
        seen.add(row["id"])
    return rows


@cache
def record() -> dict[str, Any]:
    """The dataset with each row's split filled in from its source."""
    data = json.loads(RECORD.read_text(encoding="utf-8"))
    for row in validate(data):
        row["split"] = data["sources"][row["source"]]["split"]
    return data


def rows(split: str | None = None) -> list[dict[str, Any]]:
    return [r for r in record()["rows"] if split is None or r["split"] == split]


def row(row_id: str) -> dict[str, Any]:
    for r in record()["rows"]:
        if r["id"] == row_id:
            return r
    raise KeyError(row_id)


@cache
def tree_gamma() -> float:
    """The exponent that turns a draft tree's width into independent candidates per depth (data/acceptance.json,
    fitted by bench/perfmodel_published.py); 1.0 (every candidate independent) before any fit."""
    if not ACCEPTANCE.exists():
        return 1.0
    return float(json.loads(ACCEPTANCE.read_text(encoding="utf-8"))["tree"]["gamma"])


def setting(r: dict[str, Any], key: str, default: Any = None) -> Any:
    """A row's setting as the source states it, else the bench's stated assumption, else `default`."""
    value = r.get(key)
    return r.get("assumed", {}).get(key, default) if value is None else value


def gpu_class(gpu: str) -> str:
    """Coarse GPU class for error bands: hopper (H100/H200/H20/GH200), blackwell (B200/B300/GB200), other."""
    name = gpu.lower()
    if any(t in name for t in ("h100", "h200", "h20", "gh200", "h800")):
        return "hopper"
    return "blackwell" if any(t in name for t in ("b200", "b300", "gb200", "gb300", "b100")) else "other"


@cache
def bands() -> dict[str, Any]:
    """Error bands per mechanism and GPU class from the last benchmark run ({} when it was never run)."""
    return json.loads(BANDS.read_text(encoding="utf-8")) if BANDS.exists() else {}


def band(mechanism: str, gpu: str) -> dict[str, Any] | None:
    """The benchmark's error on speedup for rows like these: this mechanism and GPU class, else this mechanism,
    else every row; None when the benchmark has no row at all."""
    table = bands().get("speedup", {})
    for key, scope in (
        (f"{mechanism}/{gpu_class(gpu)}", "this mechanism and GPU class"),
        (mechanism, "this mechanism, other GPUs"),
        ("*", "any mechanism (none of this one)"),
    ):
        if key in table and table[key]["rows"]:
            return {**table[key], "scope": scope, "key": key}
    return None


def band_text(mechanism: str, gpu: str) -> str:
    return describe_band(band(mechanism, gpu))


def describe_band(b: dict[str, Any] | None) -> str:
    """`±65% (median 21%) over 30 published rows of ...`: the largest and the median relative error."""
    if b is None:
        return "no published row to compare with"
    rows = f"{b['rows']} published row{'s' if b['rows'] != 1 else ''}"
    fitted = f", {b['fitted_rows']} of them fitted on" if b.get("fitted_rows") else ""
    return (
        f"±{b['max_rel_err']:.0%} (median {b['median_rel_err']:.0%}) over {rows} of {b['scope']}{fitted} "
        "(bench/perfmodel_published.py)"
    )
