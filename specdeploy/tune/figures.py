"""The tune report's figures (matplotlib, Agg, imported here only): every axis has its unit, every figure a
legend or a colour bar, each title says whether its numbers were measured or predicted, and a draft-length axis
has integer ticks from 0 (a flat schedule reads as one level, not a ±0.04 band). Input is the result dict."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from specdeploy.metrics import LATENCIES, MEASURED_KEYS, OUTPUT_THROUGHPUT, PER_USER_THROUGHPUT, PREDICTED_KEYS, TITLES
from specdeploy.metrics import key as metric_key
from specdeploy.tune.summary import evidence_word

Draw = Callable[[Any], None]
CONCURRENCY = "concurrency (requests in flight)"
K_AXIS = "draft length K (tokens)"


def e2e_runs(res: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in res["measurements"] if m["request"]["kind"] == "e2e" and m["ok"]]


def metrics_at(res: dict[str, Any], concurrency: int, k: int) -> dict[str, float]:
    """Each metric at (concurrency, K): the median over its end-to-end runs (a prediction's one value); a metric
    no run recorded is left out, and {} where none ran."""
    runs = [m["values"] for m in e2e_runs(res) if m["request"]["concurrency"] == concurrency and m["request"]["k"] == k]
    names = PREDICTED_KEYS if evidence_word(res) == "predicted" else MEASURED_KEYS
    return {
        name: statistics.median(float(v[name]) for v in runs)
        for name in names
        if runs and all(v.get(name) is not None for v in runs)
    }


def integer_k(ax: Any, ks: list[int], axis: str = "y") -> None:
    """Draft lengths are whole tokens: integer ticks from 0 to one above the largest K drawn."""
    from matplotlib.ticker import MaxNLocator

    top = max(ks, default=0) + 1
    if axis == "y":
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylim(-0.2, top)
    else:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlim(-0.5, top - 0.5)


def concurrency_axis(ax: Any, cs: list[int]) -> None:
    """Concurrency on a log-2 axis, ticked at the tuned concurrencies as plain numbers."""
    from matplotlib.ticker import NullLocator

    ax.set_xscale("log", base=2)
    ax.set_xticks(cs, [str(c) for c in cs])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel(CONCURRENCY)


def plain_numbers(axis: Any) -> None:
    """A log axis labelled 2, 3, 5, 10, 20 (not 2 × 10^0): decades, and 2, 3 and 5 between them."""
    from matplotlib.ticker import FuncFormatter

    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}" if f"{v:e}"[0] in "235" else ""))


def _acceptance(res: dict[str, Any], word: str) -> Iterator[tuple[str, str, Draw]]:
    hist = ((res.get("fit") or {}).get("acceptance") or {}).get("hist")
    if not hist:
        return

    def draw(ax: Any) -> None:
        ax.bar(range(len(hist)), hist, label=f"{word} steps")
        ax.set_xlabel("accepted draft tokens per step (tokens)")
        ax.set_ylabel("share of steps" if sum(hist) <= 1.0001 else "steps (count)")
        integer_k(ax, list(range(len(hist))), "x")
        ax.legend(fontsize=7)

    yield "acceptance.png", f"Acceptance histogram at K_max ({word})", draw


def _cost(res: dict[str, Any], word: str) -> Iterator[tuple[str, str, Draw]]:
    probes = ((res.get("fit") or {}).get("cost") or {}).get("probes")
    if not probes:
        return

    def draw(ax: Any) -> None:
        for c in sorted({p["concurrency"] for p in probes}):
            pts = sorted((p["k"], 1e3 * p["step_s"]) for p in probes if p["concurrency"] == c)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=f"concurrency {c}")
        ax.set_xlabel(K_AXIS)
        ax.set_ylabel("step time (ms)")
        integer_k(ax, [p["k"] for p in probes], "x")
        ax.legend(fontsize=7)

    yield "cost.png", f"Cost curve: step time T(B, K) ({word})", draw


def _decisions(res: dict[str, Any], word: str) -> Iterator[tuple[str, str, Draw]]:
    decisions = res["decisions"]
    cs = [d["concurrency"] for d in decisions]
    unit = "tok/s per user" if res["setup"]["objective"] == "latency" else "tok/s (all users)"

    def draw_k(ax: Any) -> None:
        ax.step(cs, [d["k"] for d in decisions], "o-", where="post", label="chosen by the tune")
        ax.step(
            cs, [d.get("k_emitted", d["k"]) for d in decisions], "s--", where="post", label="emitted (after clamps)"
        )
        concurrency_axis(ax, cs)
        ax.set_ylabel(K_AXIS)
        integer_k(ax, [d["k"] for d in decisions] + [d.get("k_emitted", d["k"]) for d in decisions])
        ax.legend(fontsize=7)

    def draw_tps(ax: Any) -> None:
        ax.plot(cs, [d["objective"] for d in decisions], "o-", label=f"with speculation ({word})")
        ax.plot(cs, [d["baseline"] or 0 for d in decisions], "s--", label=f"plain decoding, K = 0 ({word})")
        concurrency_axis(ax, cs)
        ax.set_ylabel(unit)
        ax.legend(fontsize=7)

    yield "k_star.png", "Draft length per concurrency", draw_k
    yield "throughput.png", f"Objective with vs without speculation ({word})", draw_tps


def _runs(res: dict[str, Any], word: str) -> Iterator[tuple[str, str, Draw]]:
    runs = e2e_runs(res)
    at = [(d["concurrency"], metrics_at(res, d["concurrency"], d["k"])) for d in res["decisions"]]
    stats = ("p50", "p99") if word == "measured" else (None,)
    lines = [
        (name, stat) for name in LATENCIES for stat in stats if any(metric_key(name, stat) in found for _, found in at)
    ]

    def draw_pareto(ax: Any) -> None:
        points = ax.scatter(
            [m["values"][OUTPUT_THROUGHPUT] for m in runs],
            [m["values"][PER_USER_THROUGHPUT] for m in runs],
            c=[m["request"]["k"] for m in runs],
            cmap="viridis",
            s=14,
        )
        ax.figure.colorbar(points, ax=ax, label=K_AXIS)
        ax.set_xlabel("output token throughput (tok/s, all users)")
        ax.set_ylabel("output token throughput per user (tok/s)")

    def draw_latency(ax: Any) -> None:
        for name, stat in lines:
            pts = [(c, found[metric_key(name, stat)]) for c, found in at if metric_key(name, stat) in found]
            ax.plot(
                [c for c, _ in pts],
                [v for _, v in pts],
                "s--" if stat == "p50" else "o-",
                color=f"C{LATENCIES.index(name)}",
                label=f"{stat} {TITLES[name]}" if stat else TITLES[name],
            )
        concurrency_axis(ax, [c for c, _ in at])
        ax.set_yscale("log")
        plain_numbers(ax.yaxis)
        ax.set_ylabel("latency (ms)")
        ax.legend(fontsize=7)

    if runs:
        yield "pareto.png", f"Per-user vs total output token throughput, every end-to-end run ({word})", draw_pareto
    if lines:
        what = "TTFT, TPOT and ITL (p50, p99)" if word == "measured" else "TTFT, TPOT and ITL"
        yield "latency.png", f"{what} at the chosen K ({word})", draw_latency


def figures(res: dict[str, Any], folder: Path) -> list[tuple[str, str]]:
    """Draw every figure the result has data for into `folder`; returns (file name, title) pairs, none without
    matplotlib (the `report` extra): the report is still written, and says so."""
    try:
        import matplotlib
    except ImportError:
        return []

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    word = evidence_word(res)
    made = []
    for part in (_acceptance, _cost, _decisions, _runs):
        for name, title, draw in part(res, word):
            fig, ax = plt.subplots(figsize=(6.4, 3.8))
            draw(ax)
            ax.set_title(title, fontsize=10)
            ax.grid(alpha=0.3)
            fig.tight_layout()
            fig.savefig(folder / name, dpi=90, metadata={"Software": None})
            plt.close(fig)
            made.append((name, title))
    return made
