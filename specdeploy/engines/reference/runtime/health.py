"""A drafter that accepts (almost) nothing is reported, not hidden.

On an H200 with transformers 5.17 the shipped EAGLE head accepted not one draft (the runtime decoded without its
KV cache there, issue 18); nothing said so, and the tuner quietly turned speculation off. Every `generate` now adds
its drafted steps to the pair's tally; once enough steps are in and the share of steps whose first draft was
accepted is far below what the drafter's training record promises (its held-out top-1 agreement), the run's
stats carry a warning naming the likely causes, printed once per pair on stderr: `specdeploy generate`, `tune`
and the demo show it, and the served model's in-flight loop (serving.py) feeds the same tally after every step,
so the warning lands in tritonserver's log.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specdeploy.boundedio import read_json
from specdeploy.engines.reference.declare import needs_model

MIN_STEPS = 32
"""Verification steps (rows x steps) before a judgement: one short request says little."""
FRACTION = 0.25
"""First-draft acceptance below this fraction of the promise is 'near zero' (the shipped head: promise 0.40,
measured 0.25-0.31 on CPU (transformers 5.17 and 5.24; bench/results/reference.json's EAGLE-3 sweep: 0.24-0.25),
0.00 on an H200 with the broken stack; no committed GPU run has measured it since the stack was fixed)."""
PROMISE_KEYS = ("step1", "target_answers")
"""training.json's `held_out_top1_agreement` entry that predicts the first draft's acceptance, per trainer."""


@dataclass(frozen=True)
class Record:
    """What a drafter's training record promises, and for which target."""

    first_draft: float
    trained_for: str
    source: str


@dataclass
class Tally:
    """Drafted steps and first-draft acceptances of one pair, across `generate` calls and served steps."""

    steps: int = 0
    first_accepted: int = 0
    warning: str = ""


def read_record(folder: Path) -> Record | None:
    """The promise in `folder`/training.json, with the target named in specdeploy_drafter.json; None without one."""
    path = folder / "training.json"
    try:
        agreement = read_json(path).get("held_out_top1_agreement") or {}
    except (OSError, ValueError, AttributeError):
        return None
    promise = next((float(agreement[k]) for k in PROMISE_KEYS if isinstance(agreement.get(k), (int, float))), None)
    if promise is None:
        return None
    try:
        meta = read_json(folder / "specdeploy_drafter.json")
    except (OSError, ValueError):
        meta = {}
    meta = meta if isinstance(meta, dict) else {}
    return Record(promise, str(meta.get("shares_embeddings_with") or ""), str(path))


def observe(pair: Any, mechanism: str, drafted_steps: int, first_hits: int) -> str:
    """Add row-steps that drafted (and those that kept their first draft) to the pair's tally; the warning (empty
    if none) once the tally shows a drafter gone silent. `generate` calls it once per run, a server's decode loop
    after every step: a K = 0 step drafts nothing and counts for nothing."""
    record: Record | None = getattr(pair.drafter, "specdeploy_record", None)
    if record is None or not needs_model(mechanism) or not drafted_steps:
        return ""
    tally: Tally = pair.tally
    tally.steps += drafted_steps
    tally.first_accepted += first_hits
    if tally.warning or tally.steps < MIN_STEPS:
        return tally.warning
    measured = tally.first_accepted / tally.steps
    if measured >= FRACTION * record.first_draft:
        return ""
    tally.warning = _message(pair, record, measured, tally.steps)
    print(f"WARNING: {tally.warning}", file=sys.stderr, flush=True)
    return tally.warning


def _message(pair: Any, record: Record, measured: float, steps: int) -> str:
    import torch
    import transformers

    from specdeploy.engines.reference.runtime.stack import supported_range

    wrong = bool(record.trained_for and pair.target_ref and record.trained_for != pair.target_ref)
    target = f"trained for {record.trained_for}, paired with {pair.target_ref or 'an unnamed target'}"
    stack = (
        f"a stack the runtime mishandles (here transformers {transformers.__version__}, torch "
        f"{torch.__version__}; tested: transformers{supported_range()}; run tests/unit/runtime on it)"
    )
    causes = [f"a wrong target ({target})", stack] if wrong else [stack, f"a target other than its own ({target})"]
    causes.append("damaged drafter weights")
    name = pair.drafter_ref or type(pair.drafter).__name__
    return (
        f"drafter {name} accepted its first draft in {measured:.0%} of {steps} steps; its training record "
        f"({record.source}) promises about {record.first_draft:.0%}. Speculation cannot pay like this. "
        f"Likely causes: {'; '.join(causes)}"
    )
