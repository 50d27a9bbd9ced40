"""bench/vllm.py's tune figures (`--starts`, `--tune`, `--sweep`), on the real vLLM with the shipped CPU profile.

- starts: a plain and an EAGLE (K = 3) engine, eager and compiled (vLLM's default AOT compile; without AOT, from
  empty caches and from the caches earlier starts filled): engine start, and decoding speed in both clocks over the
  tune's prompts, so the tune's engines can be judged against the one that serves.
- tune: `specdeploy build` of the profile (draft_len: auto), timed end to end; its schedule, decisions, engines.
- sweep: every K in 0..4 at every concurrency of the profile, the tune's own engines (VllmBackend) with more rounds;
  the truth is the median over rounds per (c, K); then the sweep's best K per concurrency served as one schedule
  engine (`--replay-best` alone). With a tune result, its quality as bench/tuner.py scores it: objective(chosen
  K) / max over the tune's K of the objective, per concurrency, for the decided K and for the K served.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from specdeploy.metrics import OUTPUT_THROUGHPUT
from specdeploy.tune.types import PLAIN_THROUGHPUT

REPO = Path(__file__).resolve().parents[1]
PROFILE = REPO / "profiles" / "cpu" / "cpu-smollm2-vllm.yaml"
SWEEP_KS = (0, 1, 2, 3, 4)


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _backend(work: Path, rounds: int) -> Any:
    from specdeploy.api import load_and_resolve
    from specdeploy.engines.vllm.plugin import Vllm
    from specdeploy.tune.setup import setup_from

    resolved = load_and_resolve(str(PROFILE))
    setup = replace(setup_from(resolved), repeats=rounds)
    return Vllm().make_tune_backend(resolved, setup, work)


def _speeds(points: list[Any]) -> dict[str, Any]:
    """Per concurrency: both clocks' median over rounds and their relative spread (MAD / median)."""
    out: dict[str, Any] = {}
    for c in sorted({p.concurrency for p in points}):
        row: dict[str, Any] = {}
        for clock, get in (("cpu", lambda p: p.tokens_per_cpu_s), ("wall", lambda p: p.output_token_throughput)):
            xs = [get(p) for p in points if p.concurrency == c]
            mid = statistics.median(xs)
            row[clock] = {
                "median": round(mid, 2),
                "runs": [round(x, 2) for x in xs],
                "rel_mad": round(statistics.median(abs(x - mid) for x in xs) / mid, 4) if mid else None,
            }
        row["al"] = round(next(p.acceptance_length for p in points if p.concurrency == c), 3)
        out[str(c)] = row
    return out


def starts(rounds: int = 2) -> dict[str, Any]:
    """Engine start and decoding speed per (engine, compilation mode). The compiled rows find vLLM's caches as
    earlier starts left them, but for the empty-caches row: a fresh machine (vLLM's cache root, its model
    registry's included, and the inductor cache in empty folders)."""
    from specdeploy.engines.vllm import env
    from specdeploy.engines.vllm.measure import measure

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        backend = _backend(Path(tmp), rounds)
        for k in (0, 3):
            empty = {"VLLM_CACHE_ROOT": f"{tmp}/vllm-k{k}", "TORCHINDUCTOR_CACHE_DIR": f"{tmp}/inductor-k{k}"}
            modes = {
                "eager": (True, {}),
                "compiled, AOT (vLLM's default)": (False, {"VLLM_USE_AOT_COMPILE": "1"}),
                "compiled, no AOT, empty caches": (False, empty),
                "compiled, no AOT (specdeploy's)": (False, {}),
            }
            for mode, (eager, extra) in modes.items():
                job = replace(backend.job(k), enforce_eager=eager)
                run = measure(env.require().python, job, Path(tmp) / "log", env_extra=extra)
                rows.append(
                    {
                        "k": k,
                        "mode": mode,
                        "start_s": round(run.start_s, 1),
                        "load_average": _load(),
                        "speed": _speeds(run.points),
                    }
                )
                print(f"[vllm bench] start K={k} {mode}: {run.start_s:.1f} s", flush=True)
    return {"rounds": rounds, "engines": rows}


def tune(out: Path) -> dict[str, Any]:
    """`specdeploy build PROFILE` (it tunes: draft_len auto), timed; what the tune chose and what it cost."""
    load, began = _load(), time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "specdeploy", "build", str(PROFILE), "--out", str(out)],
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
        check=False,
    )
    wall = time.monotonic() - began
    art = out / PROFILE.stem
    if done.returncode != 0:
        return {"exit": done.returncode, "wall_s": round(wall, 1), "tail": (done.stdout + done.stderr)[-2000:]}
    res = json.loads((art / "tune" / "result.json").read_text())
    engines = [{"k": m["request"]["k"], "run_s": round(m["cost_s"], 1)} for m in res["measurements"] if m["cost_s"]]
    return {
        "exit": 0,
        "wall_s": round(wall, 1),
        "load_average": {"start": load, "end": _load()},
        "device_s": round(res["cost"]["device_s"], 1),
        "engine_runs": engines,
        "strategy": res["strategy"],
        "setup": {
            k: res["setup"][k]
            for k in (
                "concurrency",
                "draft_lens",
                "prompts",
                "output_len",
                "repeats",
                "probe_draft_lens",
                "time_budget_s",
            )
        },
        "stopped": res["stopped"],
        "schedule": res["schedule"],
        "decisions": {
            str(d["concurrency"]): {"k": d["k"], "k_emitted": d["k_emitted"], "reason": d["reason"]}
            for d in res["decisions"]
        },
        "mixed": res["mixed"],
        "vllm_serve_speculative_config": json.loads((art / "speculative_config.json").read_text()),
    }


def sweep(rounds: int, ks: tuple[int, ...] = SWEEP_KS) -> dict[str, Any]:
    """Every K at every concurrency through the tune's own engines, `rounds` rounds each."""
    points: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        backend = _backend(Path(tmp), rounds)
        for k in ks:
            load, began = _load(), time.monotonic()
            run, _ = backend.engine(k)
            points[str(k)] = {
                "start_s": round(run.start_s, 1),
                "run_s": round(time.monotonic() - began, 1),
                "load_average": [load, _load()],
                "speed": _speeds(run.points),
            }
            print(f"[vllm bench] sweep K={k}: {points[str(k)]['speed']}", flush=True)
    return {"ks": list(ks), "rounds": rounds, "clock": backend.clock, "points": points}


def best_schedule(swept: dict[str, Any]) -> dict[str, Any]:
    """The sweep's best K per concurrency served as one engine (as `build` would emit that schedule), `rounds`
    rounds, beside the sweep's plain engine: what the per-point optimum gives as served."""
    clock, points = swept["clock"], swept["points"]
    concurrencies = sorted(points["0"]["speed"], key=int)
    best = {int(c): int(max(points, key=lambda k: points[k]["speed"][c][clock]["median"])) for c in concurrencies}
    if not any(best.values()):
        return {"schedule": best, "engine": None}
    with tempfile.TemporaryDirectory() as tmp:
        backend = _backend(Path(tmp), swept["rounds"])
        run, spent = backend.run(backend.job(max(best.values()), best), "best", max(best.values()))
    speed = _speeds(run.points)
    return {"schedule": best, "run_s": round(spent, 1), "load_average": _load(), **served_figures(swept, best, speed)}


def served_figures(swept: dict[str, Any], best: dict[int, int], speed: dict[str, Any]) -> dict[str, Any]:
    """The schedule engine's output token throughput per concurrency (`speed`, in the sweep's clock) beside the
    sweep's plain engine and its engine at that K, and each one's mean over the concurrencies."""
    clock, points = swept["clock"], swept["points"]
    per = {
        str(c): {
            "k": k,
            OUTPUT_THROUGHPUT: speed[str(c)][clock]["median"],
            "al": speed[str(c)]["al"],
            PLAIN_THROUGHPUT: points["0"]["speed"][str(c)][clock]["median"],
            f"k_engine_{OUTPUT_THROUGHPUT}": points[str(k)]["speed"][str(c)][clock]["median"],
        }
        for c, k in best.items()
    }
    names = (OUTPUT_THROUGHPUT, PLAIN_THROUGHPUT)
    mean = {name: round(statistics.mean(v[name] for v in per.values()), 2) for name in names}
    return {"speed": speed, "per_concurrency": per, "mean_over_concurrencies": mean}


def quality(tuned: dict[str, Any], swept: dict[str, Any]) -> dict[str, Any]:
    """bench/tuner.py's score with the sweep as the truth, per concurrency, in the clock the tune decided on."""
    clock, ks = swept["clock"], [0, *tuned["setup"]["draft_lens"]]
    out: dict[str, Any] = {"clock": clock, "per_concurrency": {}}
    for c, decision in tuned["decisions"].items():
        truth = {k: swept["points"][str(k)]["speed"][c][clock]["median"] for k in ks if str(k) in swept["points"]}
        best = max(truth, key=truth.__getitem__)
        # after the replay's fallback, what the build serves (a run recorded before k_emitted: its schedule says)
        served = decision.get("k_emitted", decision["k"] if tuned["schedule"]["speculation"] else 0)
        out["per_concurrency"][c] = {
            "decided": decision["k"],
            "served": served,
            "sweep_best": best,
            "quality": round(truth[decision["k"]] / truth[best], 4),
            "quality_served": round(truth[served] / truth[best], 4),
            f"truth_{OUTPUT_THROUGHPUT}": {str(k): v for k, v in truth.items()},
        }
    for name in ("quality", "quality_served"):
        out[f"min_{name}"] = min(v[name] for v in out["per_concurrency"].values())
    return out
