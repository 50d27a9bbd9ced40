"""The tune report people share: one self-contained HTML page (styles inline, figures embedded as data URIs,
also written as PNGs next to it) and `measurements.csv`. Every number says whether it was measured or predicted
by the performance model (a prediction: one value with the model's error band); the metrics carry the names the
field gives them (docs/design/metrics.md); a clamped K shows next to the K it came from; the machine and versions
it ran with close the page. Input is the result dict alone (`result.readable`), so /1 results re-render."""

from __future__ import annotations

import base64
import html
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any

from specdeploy.metrics import LATENCIES, STATS, THROUGHPUTS, TITLES, UNITS, key
from specdeploy.perfmodel.record import describe_band
from specdeploy.tune.figures import figures, metrics_at
from specdeploy.tune.result import readable
from specdeploy.tune.summary import band_word, evidence_line, evidence_word, k_text, measurements_csv, speedup_text
from specdeploy.tune.types import PLAIN_THROUGHPUT, PROMISED_THROUGHPUT

CSV = "measurements.csv"
REPORT = "report.html"
STYLE = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d2330;background:#f5f6f8}
main{max-width:1040px;margin:0 auto;padding:24px 28px 48px;background:#fff;min-height:100vh}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #e2e5ea;padding-bottom:4px}
table{border-collapse:collapse;margin:8px 0;font-variant-numeric:tabular-nums}
th,td{border:1px solid #dde1e7;padding:4px 9px;text-align:left;vertical-align:top}
th{background:#eef1f5;font-weight:600}td.num{text-align:right}
.banner{padding:10px 14px;border-radius:6px;margin:12px 0;font-weight:600}
.predicted{background:#fff4d6;border:1px solid #e8b400}.measured{background:#e5f5e9;border:1px solid #3c9a55}
.tag{display:inline-block;padding:0 6px;border-radius:4px;font-size:12px}
.tag.predicted{border:1px solid #e8b400}.tag.measured{border:1px solid #3c9a55}
.clamp{color:#a13d00;font-weight:600}.problem{color:#b00020;font-weight:600}
figure{margin:14px 0}figcaption{font-size:13px;color:#4a5260}img{max-width:100%;border:1px solid #e2e5ea}
pre{background:#f0f2f5;padding:10px;overflow-x:auto;font-size:12.5px}
"""


def _e(value: Any) -> str:
    return html.escape(str(value))


def _num(value: Any, digits: int = 1) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def _table(head: list[str], rows: list[list[str]], numeric: AbstractSet[int] = frozenset()) -> str:
    """`rows` hold HTML already escaped (cells may carry markup)."""
    top = "".join(f"<th>{_e(h)}</th>" for h in head)
    body = "".join(
        "<tr>"
        + "".join(f"<td class=num>{c}</td>" if i in numeric else f"<td>{c}</td>" for i, c in enumerate(row))
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{top}</tr></thead><tbody>{body}</tbody></table>"


def arrows(mapping: dict[str, Any]) -> str:
    """`{"1": 8, "32": 5}` as people read it: `1 → 8, 32 → 5`."""
    return ", ".join(f"{c} → {k}" for c, k in mapping.items())


def _summary(res: dict[str, Any], word: str) -> str:
    sched, setup, cost = res["schedule"], res["setup"], res["cost"]
    emitted = sched.get("emitted") or {}
    rows = [
        ["profile", _e(res["profile"])],
        ["backend", _e(res["backend"])],
        ["numbers", f"<span class='tag {word}'>{word}</span>"],
        ["strategy / objective", _e(f"{res['strategy']} / {setup['objective']}")],
        [f"{word} points", _e(cost["measurements"])],
    ]
    if word == "measured":
        rows += [["confidence", _e(res["confidence"]["level"])], ["device time", _e(f"{cost['device_s']:.0f} s")]]
    else:
        rows.append(["error band (relative, on speedup)", _e(describe_band(res.get("error_band")))])
    rows += [
        ["schedule (lower bounds: concurrency → K)", _e(arrows(sched["schedule"]))],
        [
            "max_concurrency (speculation off above)",
            _e(sched["max_concurrency"]) if sched["speculation"] else "— (speculation off at every concurrency)",
        ],
    ]
    if emitted:
        rows.append(
            [
                f"emitted for TensorRT-LLM {_e(emitted['trtllm_version'])}",
                _e(
                    f"draft_len_schedule {arrows(emitted['draft_len_schedule'])}; max_concurrency "
                    f"{emitted['max_concurrency']}"
                ),
            ]
        )
    return _table(["field", "value"], rows)


def _decisions(res: dict[str, Any], word: str) -> str:
    """One row per concurrency; a measured tune also shows what the performance model predicted for the same
    point, tagged as a prediction, so the two are never confused."""
    unit = "tok/s per user" if res["setup"]["objective"] == "latency" else "tok/s"
    field = THROUGHPUTS[2] if res["setup"]["objective"] == "latency" else THROUGHPUTS[1]
    predicted = {(p["concurrency"], p["k"]): p.get(field) for p in (res.get("fit") or {}).get("predictions") or []}
    show_model = word == "measured" and bool(predicted)
    band = band_word(res)
    rows = []
    for d in res["decisions"]:
        k = k_text(d)
        row = [
            _e(d["concurrency"]),
            f"<span class=clamp>{_e(k)}</span>" if "clamped" in k else _e(k),
            _num(d["objective"]),
            _num(d["baseline"]),
            _e(speedup_text(d, band)),
            f"<span class='tag {word}'>{word}</span>",
        ]
        if show_model:
            model = predicted.get((d["concurrency"], d["k"]))
            row.append(f"{_num(model)} <span class='tag predicted'>predicted</span>")
        rows.append([*row, _e(d["reason"])])
    head = [
        "concurrency",
        "K (chosen → emitted)",
        f"objective ({unit})",
        f"K = 0 ({unit})",
        "speedup" + (" (± error band)" if band else ""),
        "numbers",
        *([f"performance model ({unit})"] if show_model else []),
        "why",
    ]
    return _table(head, rows, numeric={0, 2, 3, 4})


def _metrics(res: dict[str, Any], word: str) -> str:
    """The metrics at the chosen K per concurrency: a measurement's median over its repeats (the throughputs, then
    each latency as mean, p50, p90 and p99 over requests, under one heading per latency); a prediction's one
    value per metric, in one table."""
    at = [(d, metrics_at(res, d["concurrency"], d["k"])) for d in res["decisions"]]
    lead = ["concurrency", "K"]

    def cells(d: dict[str, Any], values: list[float | None], digits: list[int]) -> list[str]:
        return [_e(d["concurrency"]), _e(d["k"]), *(_num(v, n) for v, n in zip(values, digits, strict=True))]

    names = [*THROUGHPUTS, *((LATENCIES) if word == "predicted" else ())]
    head = [*lead, *(f"{TITLES[n]} ({UNITS[n]})" for n in names)]
    digits = [3, *[1] * (len(names) - 1)]
    first = _table(
        head,
        [cells(d, [found.get(n if n in THROUGHPUTS else key(n)) for n in names], digits) for d, found in at],
        numeric=set(range(2, len(head))),
    )
    if word == "predicted":
        return first
    group = "".join(f"<th colspan={len(STATS)}>{_e(TITLES[n])} (ms)</th>" for n in LATENCIES)
    top = "<tr><th rowspan=2>concurrency</th><th rowspan=2>K</th>" + group + "</tr>"
    sub = "<tr>" + "".join(f"<th>{s}</th>" for _ in LATENCIES for s in STATS) + "</tr>"
    rows = "".join(
        "<tr>"
        + "".join(
            f"<td class=num>{c}</td>"
            for c in cells(
                d, [found.get(key(n, s)) for n in LATENCIES for s in STATS], [1] * len(LATENCIES) * len(STATS)
            )
        )
        + "</tr>"
        for d, found in at
    )
    return first + f"<table><thead>{top}{sub}</thead><tbody>{rows}</tbody></table>"


def _environment(res: dict[str, Any]) -> str:
    env = res.get("environment")
    if not env:
        return "<p>Not recorded in this result (results before specdeploy.tune/2 did not record it).</p>"
    gpus = ", ".join(f"{g['name']} ({g['memory_gib']} GiB)" for g in env["gpus"]) or "none"
    engine = env["engine"]
    rows = [
        ["date (UTC)", env["date"]],
        ["host", env["host"]],
        ["OS", env["os"]],
        ["CPU", env["cpu"]],
        ["GPUs", gpus],
        ["NVIDIA driver", env["driver"]],
        ["Python", env["python"]],
        ["engine", f"{engine['name']}" + (f" (profile targets {engine['release']})" if engine["release"] else "")],
        ["packages", ", ".join(f"{n} {v}" for n, v in env["packages"].items()) or "none"],
        ["specdeploy", f"{env['specdeploy']['version']}, commit {env['specdeploy']['commit'] or 'unknown'}"],
    ]
    return _table(["what", "value"], [[_e(a), _e(b)] for a, b in rows])


def _mixed(res: dict[str, Any], word: str) -> str:
    mixed = res.get("mixed")
    if not mixed:
        return ""
    row = [
        _num(mixed[THROUGHPUTS[1]]),
        _num(mixed[PLAIN_THROUGHPUT]),
        _num(mixed[PROMISED_THROUGHPUT]),
        "<span class=problem>yes</span>" if mixed["collapse"] else "no",
    ]
    return f"<h2>Mixed-concurrency replay ({word})</h2>" + _table(
        ["output token throughput with the schedule (tok/s)", "plain decoding (tok/s)", "promised (tok/s)", "collapse"],
        [row],
        numeric={0, 1, 2},
    )


def _figure(folder: Path, name: str, title: str) -> str:
    data = base64.b64encode((folder / name).read_bytes()).decode()
    return (
        f"<figure><img alt='{_e(title)}' src='data:image/png;base64,{data}'><figcaption>{_e(title)} "
        f"(<a href='{_e(name)}'>{_e(name)}</a>)</figcaption></figure>"
    )


def render_html(res: dict[str, Any], folder: Path, figs: list[tuple[str, str]]) -> str:
    res = readable(res)
    word = evidence_word(res)
    sched = res["schedule"]
    banner = evidence_line(res)
    notes = [
        *(f"<li class=clamp>{_e(n)}</li>" for n in sched["notes"]),
        *(f"<li class=problem>problem: {_e(p)}</li>" for p in res["problems"]),
    ]
    body = [
        f"<h1>specdeploy tune: {_e(res['profile'])}</h1>",
        f"<div class='banner {word}'>{_e(banner)}</div>",
        "<h2>Summary</h2>",
        _summary(res, word),
        *(["<h2>Notes</h2><ul>" + "".join(notes) + "</ul>"] if notes else []),
        "<h2>Decision per concurrency</h2>",
        _decisions(res, word),
        f"<h2>Metrics at the chosen K ({word})</h2>",
        _metrics(res, word),
        _mixed(res, word),
        "<h2>Figures</h2>",
        *(_figure(folder, n, t) for n, t in figs),
        "" if figs else "<p>No figures: drawing them needs matplotlib (pip install 'specdeploy[report]').</p>",
        "<h2>Every measurement</h2>" if word == "measured" else "<h2>Every prediction</h2>",
        f"<p><a href='{CSV}'>{CSV}</a>: {len(res['measurements'])} rows (kind, concurrency, K, evidence, the "
        "throughputs, TTFT/TPOT/ITL in ms"
        + (
            ", each as mean, p50, p90 and p99, the repeat and run seconds"
            if word == "measured"
            else ", one predicted value each"
        )
        + ", step ms, acceptance length).</p>",
        "<h2>Reproduce</h2><pre>" + _e("\n".join(res["reproduce"])) + "</pre>",
        "<h2>Machine and versions</h2>",
        _environment(res),
    ]
    return (
        "<!doctype html>\n<html lang=en><head><meta charset=utf-8><meta name=viewport "
        "content='width=device-width,initial-scale=1'>"
        f"<title>specdeploy tune: {_e(res['profile'])}</title><style>{STYLE}</style></head>\n<body><main>\n"
        + "\n".join(b for b in body if b)
        + "\n</main></body></html>\n"
    )


def write_report(res: dict[str, Any], folder: Path) -> Path:
    """Write `report.html`, its PNGs and `measurements.csv` into `folder`; returns the HTML path."""
    res = readable(res)
    folder.mkdir(parents=True, exist_ok=True)
    figs = figures(res, folder)
    (folder / CSV).write_text(measurements_csv(res))
    path = folder / REPORT
    path.write_text(render_html(res, folder, figs))
    return path
