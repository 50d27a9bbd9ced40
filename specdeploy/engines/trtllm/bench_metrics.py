"""bench.sh's last step: the trtllm-bench runs it made, one per concurrency, as one table under the names the tune
result uses (docs/design/metrics.md), written to `bench_metrics.csv` and printed, so a bench and a tune point
compare column for column.

    python3 -m specdeploy.engines.trtllm.bench_metrics 1 2 4 8     # in bench.sh's folder, after its runs
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path
from typing import Any

from specdeploy.engines.trtllm.commands import BENCH_METRICS as CSV
from specdeploy.engines.trtllm.commands import BENCH_REPORTS
from specdeploy.engines.trtllm.tune_parse import read_run
from specdeploy.metrics import LATENCIES, MEASURED_KEYS, THROUGHPUTS, key


def rows(folder: Path, concurrencies: list[int]) -> list[dict[str, Any]]:
    """One row per concurrency whose report exists: the concurrency and every measured metric (None: not reported;
    ITL needs the iteration log)."""
    out = []
    for c in concurrencies:
        report, log = (folder / BENCH_REPORTS[name].replace("$C", str(c)) for name in ("report_json", "iteration_log"))
        if report.exists():
            values = read_run(report, log)
            out.append({"concurrency": c, **{name: values.get(name) for name in MEASURED_KEYS}})
    return out


def text(table: list[dict[str, Any]]) -> str:
    """The table for a terminal: the throughputs, then each latency's mean / p50 / p90 / p99 in ms."""
    head = ["c", "req/s", "tok/s", "tok/s/user", *(f"{n.upper()} mean/p50/p90/p99 ms" for n in LATENCIES)]

    def cell(value: Any, digits: int = 1) -> str:
        return "-" if value is None else f"{value:.{digits}f}"

    lines = [" | ".join(head)]
    for r in table:
        lat = ["/".join(cell(r[key(n, s)]) for s in ("mean", "p50", "p90", "p99")) for n in LATENCIES]
        lines.append(
            " | ".join(
                [
                    str(r["concurrency"]),
                    cell(r[THROUGHPUTS[0]], 3),
                    cell(r[THROUGHPUTS[1]]),
                    cell(r[THROUGHPUTS[2]]),
                    *lat,
                ]
            )
        )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    folder = Path.cwd()
    table = rows(folder, [int(a) for a in argv])
    if not table:
        print(f"no trtllm-bench report here for concurrency {' '.join(argv)}: {CSV} not written", file=sys.stderr)
        return 1
    with (folder / CSV).open("w", newline="", encoding="utf-8") as out:
        writer = csv.DictWriter(out, ["concurrency", *MEASURED_KEYS], lineterminator="\n")
        writer.writeheader()
        writer.writerows({k: "" if v is None else v for k, v in r.items()} for r in table)
    print(text(table) + f"\n(the same in {CSV}; names as in docs/design/metrics.md)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
