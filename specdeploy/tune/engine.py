"""The tune loop: ask the strategy, measure through the recorder (checkpointed), tell, until it is done or the
budget is spent; then decide per concurrency, build the schedule, replay it under mixed concurrency (below plain
decoding: speculation off; below what its points promised: the tune fails) and assemble the versioned result."""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from specdeploy.metrics import OUTPUT_THROUGHPUT
from specdeploy.tune.book import Decision
from specdeploy.tune.checkpoint import Recorder
from specdeploy.tune.emit import k_at, off_schedule, schedule_of
from specdeploy.tune.result import BackendChoice, TuneResult
from specdeploy.tune.search import Strategy
from specdeploy.tune.types import PLAIN_THROUGHPUT, PROMISED_THROUGHPUT, Measurement, Request

COLLAPSE = 0.8
"""The replayed schedule collapses below 80% of what its per-concurrency measurements promise."""
SLOWER = 0.01
"""...or below plain decoding under the same mixed load by more than 1% and more than two runs' typical noise (a
replay and its baseline are one run each: on a machine whose runs move by 5%, 3% below plain is not a collapse)."""


@dataclass
class Outcome:
    decisions: dict[int, Decision]
    schedule: dict[str, Any]
    mixed: dict[str, Any] | None
    stopped: str | None = None
    problems: list[str] = field(default_factory=list)
    sla: dict[str, Any] = field(default_factory=dict)


def drive(
    strategy: Strategy,
    recorder: Recorder,
    *,
    budget_s: float | None = None,
    on_batch: Callable[[int], None] | None = None,
    keep_for_replay: bool = False,
) -> str | None:
    """Run ask/tell to the end; returns why it stopped early (budget), else None. With `keep_for_replay` the
    search stops early enough that the final mixed replay still fits the budget (a user's budget is the tune's).
    Requests that cost nothing (`Recorder.free`) are answered even then. With the recorder's `pool` (Ray) a batch's
    points run in parallel; the budget is then checked per batch."""
    while batch := strategy.ask():
        if on_batch:
            on_batch(len(batch))
        if recorder.pool is not None:
            kept = replay_estimate(recorder, strategy.setup.concurrency) if keep_for_replay and budget_s else 0.0
            if budget_s is not None and spent(recorder) + kept >= budget_s:
                strategy.tell([])
                return f"budget of {budget_s:.0f} device-seconds spent"
            strategy.tell(recorder.measure_batch(list(batch)))
            continue
        results: list[Measurement | None] = []
        for i, request in enumerate(batch):
            kept = replay_estimate(recorder, strategy.setup.concurrency) if keep_for_replay and budget_s else 0.0
            if budget_s is not None and not recorder.free(request) and spent(recorder) + kept >= budget_s:
                strategy.tell(results + [recorder(r) for r in batch[i + 1 :] if recorder.free(r)])
                return f"budget of {budget_s:.0f} device-seconds spent" + (
                    f" ({kept:.0f} s of it kept for the mixed replay)" if kept else ""
                )
            results.append(recorder(request))
        strategy.tell(results)
    return None


def replay_estimate(recorder: Recorder, concurrencies: Sequence[int]) -> float:
    """The final mixed replay's cost: the backend's own estimate (`replay_s()`, vLLM's: one engine) where it has
    one, else one run with and one without speculation per concurrency, each as long as the median end-to-end run
    measured at that concurrency (the longest measured anywhere, where none yet)."""
    own = getattr(recorder.measure, "replay_s", None)
    if own is not None:
        return float(own())
    costs: dict[int, list[float]] = {}
    for m in recorder.log:
        if m.request.kind == "e2e":
            costs.setdefault(m.request.concurrency, []).append(m.cost_s)
    fallback = max((max(v) for v in costs.values()), default=0.0)
    return sum(2 * (statistics.median(costs[c]) if c in costs else fallback) for c in concurrencies)


def spent(recorder: Recorder) -> float:
    return sum(m.cost_s for m in recorder.log)


def finish(strategy: Strategy, recorder: Recorder, *, replay: bool = True) -> Outcome:
    s = strategy.setup
    decisions = strategy.decisions()
    schedule = schedule_of(decisions, max_batch_size=s.max_batch_size, trtllm_version=s.trtllm_version)
    out = Outcome(decisions, schedule, None)
    if s.objective == "goodput" and s.sla:
        feasible = [c for c, d in decisions.items() if d.feasible]
        closest = {c: strategy.book.closest(c) for c in decisions}
        out.sla = {
            "limits": s.sla,
            "reachable": bool(feasible),
            "feasible_at": feasible,
            "closest": {str(c): {"k": p[0], "overshoot": p[1]} for c, p in closest.items() if p},
        }
        if not feasible:
            best = min(((c, *p) for c, p in closest.items() if p), key=lambda t: t[2], default=None)
            where = f"; closest: concurrency {best[0]}, K={best[1]}, {best[2]:.0%} over" if best else ""
            out.problems.append(f"SLA {s.sla} unreachable at every tuned concurrency: speculation off{where}")
    if replay and schedule["speculation"]:
        # the schedule as emitted (after the TRT-LLM line's clamps), and what its points promised
        pairs = tuple((c, k_at(schedule["ranges"], c)) for c in sorted(decisions))
        m = recorder(Request("mixed", max(c for c, _ in pairs), schedule["draft_len"], 0, pairs))
        if m is None:
            out.problems.append("the mixed-concurrency replay crashed twice; the schedule is unconfirmed")
        else:
            promised = sum(promise(decisions[c], k) for c, k in pairs if s.objective != "latency") / len(pairs)
            got, base = float(m.values[OUTPUT_THROUGHPUT]), float(m.values[PLAIN_THROUGHPUT])
            tolerance = max(SLOWER, 2 * strategy.book.typical_noise())
            below_plain = got < base * (1 - tolerance)
            collapse = below_plain or (promised > 0 and got < COLLAPSE * promised)
            out.mixed = {
                OUTPUT_THROUGHPUT: got,
                PLAIN_THROUGHPUT: base,
                PROMISED_THROUGHPUT: promised,
                "collapse": collapse,
                "tolerance": tolerance,
                "per_concurrency": m.values.get("per_concurrency"),
            }
            if below_plain:  # never worse than plain decoding: serve it
                out.mixed["fallback"] = "speculation off"
                out.schedule = off_schedule(
                    s.max_batch_size,
                    [
                        f"speculation off: the tuned schedule {dict(pairs)} replayed at {got:.1f} tok/s under mixed "
                        f"concurrency, below plain decoding's {base:.1f} beyond {tolerance:.1%} ({promised:.1f} "
                        "promised by its points)"
                    ],
                )
            elif collapse:
                out.problems.append(
                    f"the schedule collapses under mixed concurrency: {got:.1f} tok/s vs "
                    f"{base:.1f} without speculation and {promised:.1f} promised"
                )
    return out


def promise(d: Decision, k: int) -> float:
    """What a concurrency's point promised at the K the schedule serves there (a clamp may serve another K)."""
    if k == d.k:
        return d.objective
    if k == 0 and d.baseline is not None:
        return d.baseline
    return float((d.candidates.get(k) or {}).get("median", d.objective))


def confidence(out: Outcome, strategy: Strategy) -> dict[str, Any]:
    """Per concurrency: noise of the chosen point, margin to the runner-up, prediction error (factorized)."""
    per: dict[str, Any] = {}
    preds = getattr(strategy, "predictions", {}) or {}
    errors, noise = [], []
    for c, d in out.decisions.items():
        cands = {int(k): v for k, v in d.candidates.items()}
        chosen = cands.get(d.k)
        others = sorted((v["median"] for k, v in cands.items() if k != d.k), reverse=True)
        row: dict[str, Any] = {
            "rel_mad": chosen["rel_mad"] if chosen else None,
            "margin_vs_next": (d.objective / others[0] - 1) if others and others[0] else None,
        }
        if (c, d.k) in preds and chosen and strategy.setup.objective != "latency":
            scale = [
                v["median"] / preds[(c, k)][OUTPUT_THROUGHPUT]
                for k, v in cands.items()
                if (c, k) in preds and v["median"] > 0
            ]
            row["prediction_spread"] = (max(scale) / min(scale) - 1) if scale else None
            errors.append(row["prediction_spread"] or 0.0)
        noise.append(row["rel_mad"] or 0.0)
        per[str(c)] = row
    worst = max([*noise, *errors, 0.0])
    level = "high" if worst < 0.03 else "medium" if worst < 0.08 else "low"
    return {"level": level, "worst_spread": worst, "per_concurrency": per}


@dataclass(frozen=True)
class Provenance:
    """What a result records beside the search: the backend choice, the profile and code it was made with,
    where it is written, the model backend's error band (with the note it adds to the schedule), the report and
    the machine and versions it ran with."""

    choice: BackendChoice
    profile_hash: str
    code: str
    result_path: str
    reproduce: list[str]
    band: tuple[dict[str, Any] | None, str] | None = None
    report: str | None = None
    environment: dict[str, Any] | None = None


def result(
    strategy: Strategy,
    recorder: Recorder,
    out: Outcome,
    *,
    backend: str,
    stopped: str | None,
    provenance: Provenance,
    evidence: str = "measured",
) -> TuneResult:
    """The versioned result. `evidence` "predicted" (the performance model): one value per point (no median, MAD
    or spread: a prediction asked again says the same), no device-seconds, no confidence level, and the decisions'
    reasons say "predicted" where the book says "measured"."""
    predicted = evidence == "predicted"
    ranges = out.schedule["ranges"] if out.schedule["speculation"] else []
    decisions = []
    for _, d in sorted(out.decisions.items()):
        row = {**d.to_dict(), "k_emitted": k_at(ranges, d.concurrency), "evidence": evidence}
        if predicted:
            row["reason"] = re.sub(r"\bmeasured\b", "predicted", row["reason"])
            row["candidates"] = {k: {"value": v["median"]} for k, v in row["candidates"].items()}
        decisions.append(row)
    conf = {"level": "none (predicted)"} if predicted else confidence(out, strategy)
    if predicted:
        stopped = stopped and stopped.replace("device-seconds", "seconds of the model backend's simulated device time")
    cost: dict[str, Any] = {
        "device_s": None if predicted else spent(recorder),
        "new_measurements": recorder.calls,
        "replayed": recorder.replayed,
        "measurements": len(recorder.log),
    }
    band, note = provenance.band if provenance.band is not None else (None, None)
    schedule = {**out.schedule, "notes": [*out.schedule["notes"], note]} if note else out.schedule
    return TuneResult(
        profile=strategy.setup.profile,
        backend=backend,
        evidence=evidence,
        strategy=strategy.name,
        setup=strategy.setup.to_dict(),
        fit=strategy.fit_record(),
        decisions=decisions,
        schedule=schedule,
        mixed=out.mixed,
        sla=out.sla,
        confidence=conf,
        cost=cost,
        stopped=stopped,
        problems=out.problems,
        failures=recorder.failures,
        measurements=[
            {**m.to_dict(), "evidence": evidence, **({"cost_s": None} if predicted else {})} for m in recorder.log
        ],
        reproduce=provenance.reproduce,
        backend_choice=provenance.choice,
        profile_hash=provenance.profile_hash,
        code=provenance.code,
        result_path=provenance.result_path,
        error_band=band,
        report=provenance.report,
        environment=provenance.environment,
    )
