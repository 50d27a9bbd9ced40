"""Why a row's predicted speed-up misses by more than MISS (bench/perfmodel_published.py writes it as `miss`).

Each reason is arithmetic on the row and the prediction, not a judgement: the step times the row implies against the
model's, the AL the row implies at the model's step cost, or the row's own inconsistency. Speed-up S, AL A at depth K:
S = A T(0) / T(K), so a row fixes the step ratio T(K) / T(0) = A / S when it publishes A, and the AL S T(K) / T(0)
the model would need when it does not.
"""

from __future__ import annotations

from typing import Any

from specdeploy.perfmodel import record
from specdeploy.perfmodel.predict import Tree

MISS = 0.15
"""The held-out goal on speed-up: a row further off than this gets a reason."""


def _split(p: dict[str, Any], engine: dict[str, Any]) -> str:
    """The model's T(K) - T(0) per drafted token, as drafting and verification, and the profile terms behind them."""
    pred, eff = p["predicted"], engine["efficiency"]
    k = pred["k"]
    extra = pred["step_ms"][str(k)] - pred["step_ms"]["0"]
    return (
        f"drafting {pred['draft_ms'] / k:.2f} + verifying {(extra - pred['draft_ms']) / k:.2f} ms per token; "
        f"`{p['engine']}` draft_pass_s {1e3 * eff['draft_pass_s']:.2f} ms, token_overhead_s "
        f"{1e6 * eff['token_overhead_s']:.1f} µs"
    )


def _plain(r: dict[str, Any], p: dict[str, Any], engine: dict[str, Any], cal_tps: set[int], scale: int) -> str | None:
    """The plain step, where the row publishes one and the model is off it by more than MISS."""
    pub, pred = p["published"]["plain_tps"], p["predicted"]["plain_tps"]
    if not pub or abs(pred - pub) / pub <= MISS:
        return None
    tp = record.setting(r, "tp", 1)
    where = (
        f"the `{p['engine']}` calibration rows run TP {sorted(cal_tps)} only, none at TP {tp}, so its "
        "per-layer / all-reduce latency is not identified there"
        if tp not in cal_tps
        else f"the `{p['engine']}` profile was fitted at this TP"
    )
    eff = engine["efficiency"]
    return (
        f"plain step {1e3 * scale / pub:.2f} ms published vs {1e3 * scale / pred:.2f} ms modelled "
        f"({pred / pub - 1:+.0%}): fixed terms step {1e3 * eff['step_overhead_s']:.2f} ms, layer "
        f"{1e6 * eff['layer_overhead_s']:.0f} µs, all-reduce {1e6 * eff['allreduce_latency_s']:.0f} µs; {where}"
    )


def tree_of(cfg: dict[str, Any] | None) -> Tree | None:
    """A record row's `tree` setting as the model's Tree."""
    return Tree(cfg["steps"], cfg["topk"], cfg["draft_tokens"]) if cfg else None


def reason(
    r: dict[str, Any], p: dict[str, Any], engine: dict[str, Any], cal_tps: set[int], scale: int, gamma: float
) -> str | None:
    """One line naming the term the row contradicts, with the numbers; None when the row is within MISS (`gamma`:
    the tree exponent of this run)."""
    pub, pred = p["published"], p["predicted"]
    if not pub["speedup"] or abs(pred["speedup"] - pub["speedup"]) / pub["speedup"] <= MISS:
        return None
    k, s = pred["k"], pub["speedup"]
    t0, tk = pred["step_ms"]["0"], pred["step_ms"][str(k)]
    ratio = tk / t0
    terms = _split(p, engine)
    if r.get("al"):
        a = r["al"]
        if a / s < 1:
            return (
                f"inconsistent source: AL {a} at K = {k} with speed-up {s:.2f}x needs T(K)/T(0) = {a} / {s:.2f} "
                f"= {a / s:.3f} < 1, a verification step cheaper than a plain step; no decode-step model with "
                f"verify >= plain reaches it (the model's T(K)/T(0) = {ratio:.3f})"
            )
        plain = _plain(r, p, engine, cal_tps, scale)
        t0_pub = 1e3 * scale / pub["plain_tps"] if pub["plain_tps"] else t0
        per_pub, per_pred = (a / s - 1) * t0_pub / k, (tk - t0) / k
        plain_of = "published" if pub["plain_tps"] else "modelled"
        step = (
            f"spec step: AL {a} / speed-up {s:.2f} = T(K)/T(0) {a / s:.2f} at K = {k}, i.e. "
            f"{per_pub:.2f} ms per drafted token over a {t0_pub:.2f} ms {plain_of} plain step; the model's "
            f"{ratio:.2f}, {per_pred:.2f} ms per drafted token ({terms})"
        )
        return f"{plain}; {step}" if plain and abs(a / s - ratio) / ratio > MISS else (plain or step)
    implied = s * ratio
    if implied > k + 1:
        tp = record.setting(r, "tp", 1)
        return (
            f"step cost: the model's T(K)/T(0) = {ratio:.2f} at its best K = {k} allows at most "
            f"{(k + 1) / ratio:.2f}x even at AL = K + 1 = {k + 1} (published {s:.2f}x); its plain step "
            f"{t0:.2f} ms carries the `{p['engine']}` fixed terms fitted at TP {sorted(cal_tps)} only (this row: "
            f"TP {tp}), so drafting and verification weigh too much against it"
        )
    tree = record.setting(r, "tree")
    shape = tree_of(tree)
    rule = (
        f"tree acceptance (the `{r['mechanism']}` prior widened to {shape.effective_width(gamma):.2f} independent "
        f"candidates: width {shape.width():.3g} ** gamma {gamma:g}, for topk {tree['topk']} / "
        f"{tree['draft_tokens']} nodes / depth {tree['steps']})"
        if shape
        else f"the `{r['mechanism']}` prior"
    )
    return (
        f"no AL published, so acceptance and step cost cannot be told apart; at the model's step ratio "
        f"T(K)/T(0) = {ratio:.2f} (K = {k}) the row implies AL {implied:.2f} where {rule} gives "
        f"{pred['al']:.2f}"
    )
