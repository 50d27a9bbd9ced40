"""The tune report's figures (matplotlib, Agg, imported here only): every axis has its unit, every figure a
legend or a colour bar, and each title says whether its numbers were measured or predicted. Input is the result
dict alone."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from specdeploy.tune.summary import evidence_word

Draw = Callable[[Any], None]
CONCURRENCY = "concurrency (requests in flight)"
K_AXIS = "draft length K (tokens)"


def e2e_runs(res: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in res["measurements"] if m["request"]["kind"] == "e2e" and m["ok"]]


def p99_at(res: dict[str, Any], concurrency: int, k: int) -> dict[str, float] | None:
    """Median over the end-to-end runs at (concurrency, K) of their p99 TTFT and ITL (ms); None where none ran."""
    runs = [m["values"] for m in e2e_runs(res) if m["request"]["concurrency"] == concurrency
            and m["request"]["k"] == k and "ttft_p99_ms" in m["values"] and "itl_p99_ms" in m["values"]]
    if not runs:
        return None
    return {name: statistics.median(float(v[name]) for v in runs) for name in ("ttft_p99_ms", "itl_p99_ms")}


def _acceptance(res: dict[str, Any], word: str) -> Iterator[tuple[str, str, Draw]]:
    hist = ((res.get("fit") or {}).get("acceptance") or {}).get("hist")
    if not hist:
        return

    def draw(ax: Any) -> None:
        ax.bar(range(len(hist)), hist, label=f"{word} steps")
        ax.set_xlabel("accepted draft tokens per step (tokens)")
        ax.set_ylabel("share of steps" if sum(hist) <= 1.0001 else "steps (count)")
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
        ax.legend(fontsize=7)
    yield "cost.png", f"Cost curve: step time T(B, K) ({word})", draw


def _decisions(res: dict[str, Any], word: str) -> Iterator[tuple[str, str, Draw]]:
    decisions = res["decisions"]
    cs = [d["concurrency"] for d in decisions]
    unit = "tok/s per user" if res["setup"]["objective"] == "latency" else "tok/s (all users)"

    def draw_k(ax: Any) -> None:
        ax.step(cs, [d["k"] for d in decisions], "o-", where="post", label="chosen by the tune")
        ax.step(cs, [d.get("k_emitted", d["k"]) for d in decisions], "s--", where="post",
                label="emitted (after clamps)")
        ax.set_xscale("log", base=2)
        ax.set_xlabel(CONCURRENCY)
        ax.set_ylabel(K_AXIS)
        ax.legend(fontsize=7)

    def draw_tps(ax: Any) -> None:
        ax.plot(cs, [d["objective"] for d in decisions], "o-", label=f"with speculation ({word})")
        ax.plot(cs, [d["baseline"] or 0 for d in decisions], "s--", label=f"plain decoding, K = 0 ({word})")
        ax.set_xscale("log", base=2)
        ax.set_xlabel(CONCURRENCY)
        ax.set_ylabel(unit)
        ax.legend(fontsize=7)
    yield "k_star.png", "Draft length per concurrency", draw_k
    yield "throughput.png", f"Objective with vs without speculation ({word})", draw_tps


def _runs(res: dict[str, Any], word: str) -> Iterator[tuple[str, str, Draw]]:
    runs = e2e_runs(res)
    latency = [(d["concurrency"], p) for d in res["decisions"] if (p := p99_at(res, d["concurrency"], d["k"]))]

    def draw_pareto(ax: Any) -> None:
        points = ax.scatter([m["values"]["system_tps"] for m in runs], [m["values"]["user_tps"] for m in runs],
                            c=[m["request"]["k"] for m in runs], cmap="viridis", s=14)
        ax.figure.colorbar(points, ax=ax, label=K_AXIS)
        ax.set_xlabel("tok/s, all users")
        ax.set_ylabel("tok/s per user")

    def draw_latency(ax: Any) -> None:
        xs = [c for c, _ in latency]
        ax.plot(xs, [p["ttft_p99_ms"] for _, p in latency], "o-", label="p99 TTFT")
        ax.plot(xs, [p["itl_p99_ms"] for _, p in latency], "s-", label="p99 ITL")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel(CONCURRENCY)
        ax.set_ylabel("latency (ms)")
        ax.legend(fontsize=7)
    if runs:
        yield "pareto.png", f"Per-user vs total throughput, every end-to-end run ({word})", draw_pareto
    if latency:
        yield "latency.png", f"p99 latency at the chosen K ({word})", draw_latency


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
