"""The tune report: PNG figures (matplotlib, Agg, imported here only) and one HTML page that links them, with
the decision table and the commands to reproduce. Input is the result dict alone, so old results re-render."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any


def _figures(res: dict[str, Any], folder: Path) -> list[tuple[str, str]]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fit, decisions = res.get("fit") or {}, res["decisions"]
    acc, cost = fit.get("acceptance") or {}, fit.get("cost") or {}
    e2e = [m for m in res["measurements"] if m["request"]["kind"] == "e2e" and m["ok"]]
    figs: list[tuple[str, str]] = []

    def save(name: str, title: str, draw: Any) -> None:
        fig, ax = plt.subplots(figsize=(6, 4))
        draw(ax)
        ax.set_title(title)
        ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(folder / name, dpi=90)
        plt.close(fig)
        figs.append((name, title))

    if acc.get("hist"):
        save("acceptance.png", "Accepted drafts per step (one run at K_max)",
             lambda ax: (ax.bar(range(len(acc["hist"])), acc["hist"]), ax.set_xlabel("accepted draft tokens"),
                         ax.set_ylabel("steps")))
    if cost.get("probes"):
        def draw_cost(ax: Any) -> None:
            for c in sorted({p["concurrency"] for p in cost["probes"]}):
                pts = [(p["k"], 1e3 * p["step_s"]) for p in cost["probes"] if p["concurrency"] == c]
                ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=f"B={c}")
            ax.set_xlabel("K"), ax.set_ylabel("step ms"), ax.legend(fontsize=7)
        save("cost.png", "Measured step cost T(B, K)", draw_cost)
    cs = [d["concurrency"] for d in decisions]
    save("k_star.png", "Chosen K vs concurrency",
         lambda ax: (ax.step(cs, [d["k"] for d in decisions], "o-", where="post"), ax.set_xscale("log", base=2),
                     ax.set_xlabel("concurrency"), ax.set_ylabel("K*")))
    save("throughput.png", "Objective with vs without speculation",
         lambda ax: (ax.plot(cs, [d["objective"] for d in decisions], "o-", label="tuned"),
                     ax.plot(cs, [d["baseline"] or 0 for d in decisions], "s--", label="K=0"),
                     ax.set_xscale("log", base=2), ax.set_xlabel("concurrency"), ax.legend()))
    if e2e:
        save("pareto.png", "Per-user vs per-GPU tok/s (every measured run)",
             lambda ax: (ax.scatter([m["values"]["system_tps"] for m in e2e], [m["values"]["user_tps"] for m in e2e],
                                    c=[m["request"]["k"] for m in e2e], cmap="viridis", s=14),
                         ax.set_xlabel("tok/s per GPU"), ax.set_ylabel("tok/s per user")))
    return figs


def write_report(res: dict[str, Any], folder: Path) -> Path:
    """Write `report.html` and its PNGs into `folder`; returns the HTML path."""
    folder.mkdir(parents=True, exist_ok=True)
    figs = _figures(res, folder)
    esc = html.escape
    rows = "".join(f"<tr><td>{d['concurrency']}</td><td>{d['k']}</td><td>{d['objective']:.1f}</td>"
                   f"<td>{(d['baseline'] or 0):.1f}</td><td>{esc(d['reason'])}</td></tr>" for d in res["decisions"])
    sched = res["schedule"]
    body = [f"<h1>specdeploy tune: {esc(res['profile'])}</h1>",
            f"<p>backend {esc(res['backend'])}, strategy {esc(res['strategy'])}, objective "
            f"{esc(res['setup']['objective'])}, confidence {esc(res['confidence']['level'])}, "
            f"{res['cost']['measurements']} measurements, {res['cost']['device_s']:.0f} device-seconds</p>",
            f"<p>schedule (lower bounds) {esc(str(sched['schedule']))}, max_concurrency {sched['max_concurrency']}, "
            f"emitted {esc(str(sched['emitted']))}</p>",
            *(f"<p><b>problem:</b> {esc(p)}</p>" for p in res["problems"]),
            "<table border=1><tr><th>concurrency</th><th>K</th><th>objective</th><th>K=0</th><th>why</th></tr>"
            f"{rows}</table>",
            *(f"<h3>{esc(t)}</h3><img src='{n}'>" for n, t in figs),
            "<h2>Reproduce</h2><pre>" + esc("\n".join(res["reproduce"])) + "</pre>"]
    path = folder / "report.html"
    path.write_text("<!doctype html><meta charset=utf-8><title>specdeploy tune</title>\n" + "\n".join(body) + "\n")
    return path
