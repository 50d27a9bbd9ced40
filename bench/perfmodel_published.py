"""The performance model against the published record -> bench/results/perfmodel_published.json.

1. The H200 step-cost grid (torch eager, the second calibration source): fit as shipped and with torch SDPA's
   G-fold KV reads at T > 1 (attention.py `gqa_packed=False`); how much of the T = 1 -> 2 jump that proxy term is.
2. Engine profiles (trtllm, sglang, vllm): fixed per-step/per-layer/per-token costs, TP all-reduce latency, the
   drafter's per-pass latency and the bandwidth efficiency, fitted by non-negative least squares on the relative
   step-time error of the calibration rows only (data/published.json, split by source before any fitting).
3. Every predictable row, calibration and held-out: predicted speedup and tokens/s against the published ones;
   median and max relative error (|predicted / published - 1|) per split, per mechanism and per batch of sources
   (data/published.json `batch`: 1 before the first fit, 2 read after it, 3 read after the held-out figures,
   calibration only); error bands for `plan`; for every row whose speed-up is off by more than 15 % a `miss` line
   (bench/perfmodel_misses.py).

    .venv/bin/python bench/perfmodel_published.py          # seconds; writes the results, data/engines.json, bands.json
    .venv/bin/python bench/perfmodel_published.py --check  # exit 1 if the checked-in profiles or bands are stale
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import numpy as np  # noqa: E402
from perfmodel_misses import reason, tree_of  # noqa: E402

from specdeploy.perfmodel import record  # noqa: E402
from specdeploy.perfmodel.acceptance import AcceptanceProfile, iid_alpha  # noqa: E402
from specdeploy.perfmodel.calibrate import DEFAULT_FIT, calibrate_file, load_step_costs  # noqa: E402
from specdeploy.perfmodel.cost import Efficiency, forward_work, step_time  # noqa: E402
from specdeploy.perfmodel.engines import ENGINES_FILE  # noqa: E402
from specdeploy.perfmodel.predict import AnalyticTimer, Tree  # noqa: E402
from specdeploy.perfmodel.priors import prior_profile  # noqa: E402
from specdeploy.perfmodel.shapes import EAGLE3_LLAMA_3_1_8B, SHAPES  # noqa: E402
from specdeploy.resolve.gpus import GPUS  # noqa: E402

GRID = REPO / "bench" / "results" / "step_cost-nvidia-h200.json"
"""The grid bench/gpu/step_cost.py measured on one H200 (2026-11-30), committed as this file."""
DEFAULT_CONTEXT = 1024
"""Decode context where a row states no input/output lengths."""
K_RANGE = range(1, 9)
LINEAR = {
    "trtllm": ("layer_overhead_s", "alltoall_latency_s", "draft_pass_s"),
    "sglang": ("layer_overhead_s", "allreduce_latency_s", "draft_pass_s"),
    "vllm": ("step_overhead_s", "token_overhead_s", "draft_pass_s"),
}
"""Linear terms fitted per engine: only as many as its calibration rows can tell apart. TRT-LLM: every row
runs TP > 1, so the all-reduce latency (2 per layer) is the per-layer term; the MTP sweep adds one drafter pass and
one verified token per K, so per-pass and per-token costs are one column there and the pass gets it (the Scout
n-gram rows, held out, verify 6-24 tokens a step with no pass). SGLang: the all-reduce column is 0 at TP 1 and
2 per layer above, so TP 1 rows (Llama-3.1-8B) against TP 2/4 rows (Qwen3-30B-A3B only) tell it from the per-layer
term, confounded with whatever else differs between those two models; trees verify more tokens than they make
passes. vLLM: per-step and per-layer are one column; Qwen3-8B at three batch sizes (0.31) tells the per-token term
from the per-step one, and batch-1 rows with a published AL (2025 releases) the per-pass term."""
BASE = Efficiency(compute=0.7, step_overhead_s=0.0, allreduce_latency_s=0.0)
QUANT = {"nvfp4": "nvfp4", "fp8": "fp8", "bfloat16": "none", "float16": "none", None: "none"}


def setup(r: dict[str, Any], eff: Efficiency, gamma: float) -> tuple[AnalyticTimer, AcceptanceProfile, int, bool]:
    """The row's deployment as the model sees it: (timer, acceptance, batch, per-user metric); `gamma`: the tree
    exponent this run fitted (not the checked-in one, which may be stale)."""
    model = SHAPES[r["model"]]
    draft = SHAPES.get(r.get("draft") or "") or (
        EAGLE3_LLAMA_3_1_8B if r["mechanism"] == "eagle3" and r["model"] == "llama-3.1-8b" else None
    )
    tree_cfg = record.setting(r, "tree")
    tree = tree_of(tree_cfg)
    isl, osl = r.get("isl"), r.get("osl")
    context = isl + osl // 2 if isl and osl else DEFAULT_CONTEXT
    timer = AnalyticTimer(
        model,
        GPUS[record.setting(r, "gpu")],
        mechanism=r["mechanism"],
        draft=draft,
        quantization=QUANT[record.setting(r, "precision")],
        tp=record.setting(r, "tp", 1),
        context=context,
        eff=eff,
        ep=record.setting(r, "ep", 1) or 1,
        tree=tree,
    )
    depth_ = tree.depth() if tree else r.get("k")
    if r.get("al") and depth_:  # a published AL is the tree's own when the row drafts a tree: not widened
        profile = AcceptanceProfile.iid(iid_alpha(r["al"], depth_), depth_, f"published AL {r['al']} at K = {depth_}")
    else:
        profile = prior_profile(r["mechanism"])
        profile = tree.acceptance(profile, gamma) if tree else profile
    per_user = "per user" in r["metric"] or "speed-up" in r["metric"] or "speedup" in r["metric"]
    return timer, profile, record.setting(r, "batch", 1), per_user


def tree_al(alpha: float, tree: Tree, gamma: float) -> float:
    """A tree's AL for chain rate alpha when its width counts as width ** gamma independent candidates."""
    return tree.acceptance(AcceptanceProfile.iid(alpha, tree.steps, "chain"), gamma).expected_al(tree.steps)


def fit_tree_gamma(cal: list[dict[str, Any]]) -> dict[str, Any]:
    """gamma, shared, and a chain rate per source (its drafter and prompts), by least squares on the relative AL
    error of the calibration rows that publish a tree's AL, from sources with a tree wider than a chain."""
    by_source: dict[str, list[tuple[dict[str, Any], Tree]]] = defaultdict(list)
    for r in cal:
        tree = tree_of(record.setting(r, "tree"))
        if r.get("al") and tree:
            by_source[r["source"]].append((r, tree))
    by_source = {s: v for s, v in by_source.items() if any(t.width() > 1 for _, t in v)}
    alphas = np.linspace(0.05, 0.99, 471)

    def per_source(gamma: float, rows: list[tuple[dict[str, Any], Tree]]) -> tuple[float, float]:
        losses = [sum(((tree_al(a, t, gamma) - r["al"]) / r["al"]) ** 2 for r, t in rows) for a in alphas]
        best = int(np.argmin(losses))
        return float(losses[best]), float(alphas[best])

    gammas = np.linspace(0.0, 1.0, 101)  # above 1 a candidate would be worth more than an independent one
    totals = [sum(per_source(g, rows)[0] for rows in by_source.values()) for g in gammas]
    gamma = float(gammas[int(np.argmin(totals))])
    alpha = {s: per_source(gamma, rows)[1] for s, rows in by_source.items()}
    rel = [abs(tree_al(alpha[s], t, gamma) - r["al"]) / r["al"] for s, rows in by_source.items() for r, t in rows]
    old = [
        abs(tree_al(per_source(1.0, rows)[1], t, 1.0) - r["al"]) / r["al"]
        for rows in by_source.values()
        for r, t in rows
    ]
    return {
        "gamma": gamma,
        "chain_alpha": alpha,
        "fitted_on": sorted(r["id"] for v in by_source.values() for r, _ in v),
        "al_rel_err": {"mean": statistics.mean(rel), "max": max(rel)},
        "al_rel_err_gamma_1": {"mean": statistics.mean(old), "max": max(old)},
    }


def depth(r: dict[str, Any], timer: AnalyticTimer, profile: AcceptanceProfile, batch: int) -> int:
    """The row's K (tree depth), else the K the model finds best."""
    tree = record.setting(r, "tree")
    if tree:
        return int(tree["steps"])
    if isinstance(r.get("k"), int):
        return int(r["k"])
    return max(K_RANGE, key=lambda k: profile.expected_al(k) / timer.step_seconds(batch, k))


def predictable(r: dict[str, Any]) -> bool:
    return (
        r.get("predictable", True)
        and r.get("model") in SHAPES
        and record.setting(r, "gpu") in GPUS
        and r.get("engine")
        and r["metric"] != "acceptance only"
    )


def predict_row(r: dict[str, Any], eff: Efficiency, gamma: float) -> dict[str, Any]:
    timer, profile, batch, per_user = setup(r, eff, gamma)
    k = depth(r, timer, profile, batch)
    scale = 1 if per_user else batch
    plain, al = scale / timer.step_seconds(batch, 0), profile.expected_al(k)
    spec = scale * al / timer.step_seconds(batch, k)
    return {
        "k": k,
        "al": al,
        "plain_tps": plain,
        "spec_tps": spec,
        "speedup": spec / plain,
        "step_ms": {"0": 1e3 * timer.step_seconds(batch, 0), str(k): 1e3 * timer.step_seconds(batch, k)},
        "draft_ms": 1e3 * timer.draft_seconds(batch, k),
    }


def observations(r: dict[str, Any], eff: Efficiency, gamma: float) -> list[tuple[int, float]]:
    """(K, step seconds the row implies): plain steps from the baseline, speculative ones from spec tokens/s and
    the AL used (published, else the prior) — only where the row fixes K."""
    timer, profile, batch, per_user = setup(r, eff, gamma)
    scale = 1 if per_user else batch
    out = [(0, scale / r["baseline_tps"])] if r.get("baseline_tps") else []
    tree, k = record.setting(r, "tree"), r.get("k")
    if r.get("spec_tps") and (tree or isinstance(k, int)):
        kk = int(tree["steps"]) if tree else int(k)
        out.append((kk, scale * profile.expected_al(kk) / r["spec_tps"]))
    return out


def nnls(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Least squares with x >= 0 (drop the most negative coefficient and re-solve)."""
    active = list(range(a.shape[1]))
    x = np.zeros(a.shape[1])
    while active:
        sol = np.linalg.lstsq(a[:, active], b, rcond=None)[0]
        if (sol >= 0).all():
            x[:] = 0
            x[active] = sol
            return x
        active.pop(int(np.argmin(sol)))
    return x


def step_seconds(r: dict[str, Any], eff: Efficiency, gamma: float, k: int) -> float:
    """The model's step time for the row's deployment at K."""
    timer, _, batch, _ = setup(r, eff, gamma)
    return timer.step_seconds(batch, k)


def fit_engine(engine: str, cal: list[dict[str, Any]], gamma: float) -> dict[str, Any]:
    """Bandwidth efficiency on a grid (0.3-1.0, not above the datasheet), the engine's linear terms by NNLS on
    relative step-time error; each step time is linear in those terms, so columns are unit differences."""
    names = LINEAR[engine]
    pts = [(r, k, t) for r in cal for k, t in observations(r, BASE, gamma)]
    best: tuple[float, Efficiency] | None = None
    for bw in np.linspace(0.3, 1.0, 71):
        base = replace(BASE, bandwidth=float(bw))

        def seconds(e: Efficiency) -> np.ndarray:
            return np.array([step_seconds(r, e, gamma, k) for r, k, _ in pts])

        y, r0 = np.array([t for *_, t in pts]), seconds(base)
        cols = np.stack([(seconds(replace(base, **{n: 1e-3})) - r0) / 1e-3 for n in names], axis=1)
        x = nnls(cols / y[:, None], (y - r0) / y)
        eff = replace(base, **{n: float(v) for n, v in zip(names, x)})
        loss = float(((((r0 + cols @ x) - y) / y) ** 2).sum())
        if best is None or loss < best[0]:
            best = (loss, eff)
    assert best is not None
    rel = [abs(step_seconds(r, best[1], gamma, k) - t) / t for r, k, t in pts]
    return {
        "efficiency": best[1].to_dict(),
        "fitted": list(names),
        "fitted_on": sorted({r["id"] for r, *_ in pts}),
        "points": len(pts),
        "step_rel_err": {"mean": statistics.mean(rel), "max": max(rel)},
    }


def grid_study() -> dict[str, Any]:
    """The H200 grid: as shipped vs torch SDPA's G-fold KV reads at T > 1, and the proxy's share of the jump."""
    fits = {
        "as shipped": calibrate_file(str(GRID)),
        "torch SDPA proxy (gqa_packed=False)": calibrate_file(str(GRID), gqa_packed=False),
        "proxy + per-token": calibrate_file(str(GRID), gqa_packed=False, fit=(*DEFAULT_FIT, "token_overhead_s")),
    }
    eff = fits["torch SDPA proxy (gqa_packed=False)"].eff
    gpu = fits["as shipped"].gpu
    _, _, shapes = load_step_costs(str(GRID))

    def cost(model: Any, b: int, t: int, ctx: int, packed: bool) -> float:
        return step_time(
            forward_work(model, batch=b, tokens=t, context=ctx, lm_head=False, gqa_packed=packed), gpu, eff
        ).total_s

    jumps = []
    for model, points in shapes:
        seconds = {(p.batch, p.tokens, p.context): p.seconds for p in points}
        for b, ctx in sorted({(p.batch, p.context) for p in points}):
            measured = seconds[(b, 2, ctx)] - seconds[(b, 1, ctx)]
            proxy = cost(model, b, 2, ctx, False) - cost(model, b, 2, ctx, True)
            jumps.append(
                {
                    "shape": model.name,
                    "batch": b,
                    "context": ctx,
                    "measured_jump_ms": 1e3 * measured,
                    "proxy_term_ms": 1e3 * proxy,
                    "packed_model_jump_ms": 1e3 * (cost(model, b, 2, ctx, True) - cost(model, b, 1, ctx, True)),
                    "proxy_share": proxy / measured if measured > 1e-4 else None,
                }
            )
    return {
        "file": str(GRID.relative_to(REPO)),
        "fits": {k: v.to_dict() for k, v in fits.items()},
        "t1_to_t2_jump": jumps,
    }


def errors(preds: list[dict[str, Any]], key: str) -> dict[str, Any]:
    errs = [
        abs(p["predicted"][key] - p["published"][key]) / p["published"][key] for p in preds if p["published"].get(key)
    ]
    if not errs:
        return {"rows": 0}
    return {"rows": len(errs), "median_rel_err": statistics.median(errs), "max_rel_err": max(errs)}


def summary(preds: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for split in record.SPLITS:
        part = [p for p in preds if p["split"] == split]
        by_mech, by_source = defaultdict(list), defaultdict(list)
        for p in part:
            by_mech[p["mechanism"]].append(p)
            by_source[p["source"]].append(p)
        out[split] = {
            "all": {k: errors(part, k) for k in ("speedup", "spec_tps", "plain_tps")},
            "sources_added_after_the_first_fit": {
                k: errors([p for p in part if p["added"]], k) for k in ("speedup", "spec_tps")
            },
            "sources_before_the_first_fit": {
                k: errors([p for p in part if not p["added"]], k) for k in ("speedup", "spec_tps")
            },
            "per_batch": {
                str(b): {k: errors([p for p in part if p["batch"] == b], k) for k in ("speedup", "spec_tps")}
                for b in sorted({p["batch"] for p in part})
            },
            "speedup_misses": sorted(p["id"] for p in part if "miss" in p),
            "per_mechanism": {
                m: {k: errors(ps, k) for k in ("speedup", "spec_tps")} for m, ps in sorted(by_mech.items())
            },
            "per_source": {
                m: {k: errors(ps, k) for k in ("speedup", "spec_tps", "plain_tps")}
                for m, ps in sorted(by_source.items())
            },
        }
    return out


def bands(preds: list[dict[str, Any]], fitted: set[str]) -> dict[str, Any]:
    """Speedup error per mechanism/GPU class, per mechanism and overall, over all predictable rows; `fitted_rows`:
    how many of them an engine profile was fitted on (`fitted`: their ids)."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for p in preds:
        for key in (f"{p['mechanism']}/{record.gpu_class(p['gpu'])}", p["mechanism"], "*"):
            groups[key].append(p)
    table = {
        k: {**errors(v, "speedup"), "fitted_rows": errors([p for p in v if p["id"] in fitted], "speedup")["rows"]}
        for k, v in sorted(groups.items())
    }
    return {
        "speedup": table,
        "note": "absolute relative error of the predicted speedup over calibration and held-out rows together",
    }


def compute() -> dict[str, Any]:
    """Everything the bench finds: the grid study, the engine fits (calibration rows only), every row's prediction,
    the summaries and the bands."""
    grid = grid_study()
    cal = [r for r in record.rows("calibration") if predictable(r)]
    tree = fit_tree_gamma(cal)
    gamma = tree["gamma"]
    engines = {e: fit_engine(e, [r for r in cal if r["engine"] == e], gamma) for e in LINEAR}
    engines["torch-eager"] = {
        "efficiency": grid["fits"]["torch SDPA proxy (gqa_packed=False)"]["efficiency"],
        "fitted_on": ["H200 step-cost grid (eager PyTorch, torch SDPA)"],
    }
    effs = {e: Efficiency.from_dict(v["efficiency"]) for e, v in engines.items()}
    preds = []
    for r in record.rows():
        if not predictable(r):
            continue
        published = {
            "speedup": r.get("speedup")
            or (r["spec_tps"] / r["baseline_tps"] if r.get("spec_tps") and r.get("baseline_tps") else None),
            "spec_tps": r.get("spec_tps"),
            "plain_tps": r.get("baseline_tps"),
        }
        preds.append(
            {
                "id": r["id"],
                "split": r["split"],
                "mechanism": r["mechanism"],
                "gpu": record.setting(r, "gpu"),
                "source": r["source"],
                "added": bool(record.record()["sources"][r["source"]].get("added")),
                "batch": record.record()["sources"][r["source"]].get("batch", 1),
                "engine": r["engine"],
                "published": published,
                "predicted": predict_row(r, effs[r["engine"]], gamma),
            }
        )
    for p in preds:
        r, engine = record.row(p["id"]), engines[p["engine"]]
        _, _, batch, per_user = setup(r, effs[p["engine"]], gamma)
        cal_tps = {record.setting(record.row(i), "tp", 1) for i in engine["fitted_on"]}
        why = reason(r, p, engine, cal_tps, 1 if per_user else batch, gamma)
        if why:
            p["miss"] = why
    skipped = [
        {"id": r["id"], "why": "setting not stated: " + ", ".join(r["not_stated"])}
        for r in record.rows()
        if not predictable(r) and r["metric"] != "acceptance only"
    ]
    return {
        "grid": grid,
        "tree_acceptance": tree,
        "engines": engines,
        "rows": preds,
        "skipped": skipped,
        "summary": summary(preds),
        "bands": bands(preds, {i for e in LINEAR for i in engines[e]["fitted_on"]}),
    }


def outputs(result: dict[str, Any]) -> dict[Path, str]:
    """The files the bench writes: its result, and the engine profiles and bands `plan` reads."""
    engines = {"format": "specdeploy.engines/1", "by": "bench/perfmodel_published.py", "engines": result["engines"]}
    return {
        REPO / "bench" / "results" / "perfmodel_published.json": json.dumps(result, indent=1) + "\n",
        ENGINES_FILE: json.dumps(engines, indent=1) + "\n",
        record.ACCEPTANCE: json.dumps(
            {
                "format": "specdeploy.acceptance/1",
                "by": "bench/perfmodel_published.py",
                "tree": result["tree_acceptance"],
            },
            indent=1,
        )
        + "\n",
        record.BANDS: json.dumps(result["bands"], indent=1) + "\n",
    }


def _same(a: Any, b: Any) -> bool:
    """Equal up to the last bits of a float: the fit's sums round differently across BLAS builds and machines."""
    if isinstance(a, float) or isinstance(b, float):
        return (
            isinstance(a, int | float)
            and isinstance(b, int | float)
            and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-15)
        )
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return bool(a == b)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 if the checked-in data/engines.json, bands.json or acceptance.json differ",
    )
    args = parser.parse_args()
    result = compute()
    files = outputs(result)
    if args.check:
        stale = [
            str(p.relative_to(REPO))
            for p in (ENGINES_FILE, record.BANDS, record.ACCEPTANCE)
            if not p.exists() or not _same(json.loads(p.read_text(encoding="utf-8")), json.loads(files[p]))
        ]
        print(
            "stale: " + ", ".join(stale)
            if stale
            else "engines.json, bands.json and acceptance.json are what the bench computes"
        )
        return 1 if stale else 0
    for path, text in files.items():
        path.write_text(text, encoding="utf-8")
    for p in result["rows"]:
        pub, pre = p["published"], p["predicted"]
        sp = f"{pre['speedup']:.2f}x vs {pub['speedup']:.2f}x" if pub["speedup"] else f"{pre['speedup']:.2f}x"
        tps = f"; {pre['spec_tps']:.0f} vs {pub['spec_tps']:.0f} tok/s" if pub["spec_tps"] else ""
        print(f"{p['split']:<11} {p['id']:<28} K={pre['k']} AL {pre['al']:.2f} speedup {sp}{tps}")
    for p in result["rows"]:
        if "miss" in p:
            print(f"miss {p['split']:<11} {p['id']:<28} {p['miss']}")
    for split, s in result["summary"].items():
        print(split, json.dumps(s["all"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
