"""A tune result as people read it: the console lines and the CSV of every measurement. Both say which backend
produced each number (measured or predicted) and show a clamped K next to the K it came from."""

from __future__ import annotations

import csv
import io
from typing import Any

CSV_FIELDS = ("kind", "concurrency", "k", "repeat", "evidence", "backend", "ok", "system_tps", "user_tps",
              "ttft_p99_ms", "itl_p99_ms", "step_ms", "acceptance_length", "run_s", "error")


def evidence_word(res: dict[str, Any]) -> str:
    """How a result's numbers were got: "predicted" (the performance model), else "measured"."""
    return "predicted" if res.get("evidence") == "predicted" else "measured"


def evidence_line(res: dict[str, Any]) -> str:
    """The headline: which backend produced the numbers, and why it was chosen."""
    why = (res.get("backend_choice") or {}).get("why")
    what = ("PREDICTED by the performance model (nothing measured)" if evidence_word(res) == "predicted"
            else f"measured by the {res['backend']} backend")
    return f"backend {res['backend']}: every number below is {what}" + (f" [{why}]" if why else "")


def k_text(d: dict[str, Any]) -> str:
    """`6` or `6 -> 2 (clamped)` when the emitted schedule serves another K than the tune chose."""
    emitted = d.get("k_emitted", d["k"])
    return f"{d['k']}" if emitted == d["k"] else f"{d['k']} -> {emitted} (clamped)"


def decision_lines(res: dict[str, Any]) -> list[str]:
    word = evidence_word(res)
    sched = res["schedule"]
    rows = [f"c={d['concurrency']:<4} K={k_text(d):<16} {word} {d['objective']:10.1f} "
            f"(K=0 {d['baseline'] or 0:.1f}) {d['reason']}" for d in res["decisions"]]
    return [evidence_line(res), *rows, *(f"note: {n}" for n in sched["notes"]),
            *(f"failed twice, left out: {f['key']}: {f['errors'][-1]}" for f in res["failures"]),
            f"schedule {sched['schedule']} max_concurrency {sched['max_concurrency']}", f"result {res['result_path']}"]


def measurements_csv(res: dict[str, Any]) -> str:
    """Every measurement (or prediction) as one CSV row; `run_s` is empty for predictions (no device time)."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for m in res["measurements"]:
        r, v = m["request"], m.get("values") or {}
        writer.writerow({
            "kind": r["kind"], "concurrency": r["concurrency"], "k": r["k"], "repeat": r["repeat"],
            "evidence": m.get("evidence", res.get("evidence", "measured")), "backend": res["backend"], "ok": m["ok"],
            "system_tps": v.get("system_tps", ""), "user_tps": v.get("user_tps", ""),
            "ttft_p99_ms": v.get("ttft_p99_ms", ""), "itl_p99_ms": v.get("itl_p99_ms", ""),
            "step_ms": 1e3 * v["step_s"] if "step_s" in v else "", "acceptance_length": v.get("al", ""),
            "run_s": "" if m.get("cost_s") is None else m["cost_s"], "error": m.get("error") or ""})
    return buf.getvalue()
