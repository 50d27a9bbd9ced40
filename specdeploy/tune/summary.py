"""A tune result as people read it: the console lines and the CSV of every measurement. Both say which backend
produced each number (measured or predicted), name the metrics as the field does (docs/design/metrics.md) and
show a clamped K next to the K it came from. A prediction is one value per metric with the model's error band."""

from __future__ import annotations

import csv
import io
from typing import Any

from specdeploy.metrics import MEASURED_KEYS, PREDICTED_KEYS
from specdeploy.tune.result import readable


def csv_fields(predicted: bool) -> tuple[str, ...]:
    """A measured run: its repeat, each latency's mean/p50/p90/p99, its device seconds. A prediction: one value
    per metric, asked once, no seconds."""
    if predicted:
        return (
            "kind",
            "concurrency",
            "k",
            "evidence",
            "backend",
            "ok",
            *PREDICTED_KEYS,
            "step_ms",
            "acceptance_length",
            "error",
        )
    return (
        "kind",
        "concurrency",
        "k",
        "repeat",
        "evidence",
        "backend",
        "ok",
        *MEASURED_KEYS,
        "step_ms",
        "acceptance_length",
        "run_s",
        "error",
    )


def evidence_word(res: dict[str, Any]) -> str:
    """How a result's numbers were got: "predicted" (the performance model), else "measured"."""
    return "predicted" if res.get("evidence") == "predicted" else "measured"


def evidence_line(res: dict[str, Any]) -> str:
    """The headline: which backend produced the numbers, and why it was chosen."""
    why = (res.get("backend_choice") or {}).get("why")
    what = (
        "PREDICTED by the performance model (nothing measured)"
        if evidence_word(res) == "predicted"
        else f"measured by the {res['backend']} backend"
    )
    return f"backend {res['backend']}: every number below is {what}" + (f" [{why}]" if why else "")


def k_text(d: dict[str, Any]) -> str:
    """`6` or `6 -> 2 (clamped)` when the emitted schedule serves another K than the tune chose."""
    emitted = d.get("k_emitted", d["k"])
    return f"{d['k']}" if emitted == d["k"] else f"{d['k']} -> {emitted} (clamped)"


def band_word(res: dict[str, Any]) -> str:
    """A prediction's error band as a suffix (` ±65%`): the model's largest relative error on speedup over the
    published rows like this one; empty for a measurement or where no row compares."""
    band = res.get("error_band") if evidence_word(res) == "predicted" else None
    return f" ±{band['max_rel_err']:.0%}" if band and band.get("max_rel_err") is not None else ""


def speedup_text(d: dict[str, Any], band: str = "") -> str:
    return f"{d['speedup']:.2f}×{band}" if d.get("speedup") else "—"


def decision_lines(res: dict[str, Any]) -> list[str]:
    res = readable(res)
    word, band = evidence_word(res), band_word(res)
    sched = res["schedule"]
    rows = [
        f"c={d['concurrency']:<4} K={k_text(d):<16} {word} {d['objective']:10.1f} "
        f"(K=0 {d['baseline'] or 0:.1f}) speedup {speedup_text(d, band)} {d['reason']}"
        for d in res["decisions"]
    ]
    return [
        evidence_line(res),
        *rows,
        *(f"note: {n}" for n in sched["notes"]),
        *(f"failed twice, left out: {f['key']}: {f['errors'][-1]}" for f in res["failures"]),
        f"schedule {sched['schedule']} max_concurrency {sched['max_concurrency']}",
        f"result {res['result_path']}",
    ]


def measurements_csv(res: dict[str, Any]) -> str:
    """Every measurement (or prediction) as one CSV row, the metrics under their own names."""
    res = readable(res)
    fields = csv_fields(evidence_word(res) == "predicted")
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fields, lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    for m in res["measurements"]:
        r, v = m["request"], m.get("values") or {}
        writer.writerow(
            {
                **{name: "" if v.get(name) is None else v[name] for name in fields},
                "kind": r["kind"],
                "concurrency": r["concurrency"],
                "k": r["k"],
                "repeat": r["repeat"],
                "evidence": m.get("evidence", res.get("evidence", "measured")),
                "backend": res["backend"],
                "ok": m["ok"],
                "step_ms": 1e3 * v["step_s"] if "step_s" in v else "",
                "acceptance_length": v.get("al", ""),
                "run_s": "" if m.get("cost_s") is None else m["cost_s"],
                "error": m.get("error") or "",
            }
        )
    return buf.getvalue()
