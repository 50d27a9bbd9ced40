"""A drafter accepting far less than its training record promises is reported (stderr once, stats.warnings).

Tiny float64 Llamas: a drafter that is the target itself accepts everything, one with other random weights almost
nothing. The records are the shipped drafters' real training.json files, or a Record for the tiny pair.
"""

from __future__ import annotations

import pytest

from specdeploy.engines.reference.runtime import generate
from specdeploy.engines.reference.runtime.health import MIN_STEPS, Record, read_record
from specdeploy.engines.reference.runtime.models import DRAFTER_DIR, SMOLLM2_REF, ModelPair
from specdeploy.runtime_paths import packaged_model
from tests.unit.runtime.tiny import random_prompts, tiny_llama

PROMPTS = random_prompts(6, 96, seed=4)


def pair_with(drafter_seed: int, target_ref: str = "tiny/target", trained_for: str = "tiny/target") -> ModelPair:
    target = tiny_llama(0)
    drafter = target if drafter_seed == 0 else tiny_llama(drafter_seed, layers=1)
    drafter.specdeploy_record = Record(0.4, trained_for, "drafters/tiny/training.json")
    return ModelPair(target, drafter, target_ref=target_ref, drafter_ref="tiny/drafter")


def test_the_shipped_records_promise_their_held_out_agreement():
    eagle = read_record(packaged_model("specdeploy/smollm2-135m-eagle3"))
    small = read_record(DRAFTER_DIR)
    assert eagle is not None and small is not None
    assert 0.3 < eagle.first_draft < 0.5 and 0.25 < small.first_draft < 0.5
    assert eagle.trained_for == small.trained_for == SMOLLM2_REF


def test_a_silent_drafter_is_reported_once_with_its_likely_causes(capsys):
    pair = pair_with(drafter_seed=9)
    _, stats = generate(pair, PROMPTS, "draft_target", 3, 2, 12)
    assert stats.seq_steps >= MIN_STEPS and stats.acceptance_rate < 0.1
    assert len(stats.warnings) == 1
    message = stats.warnings[0]
    assert "tiny/drafter accepted its first draft in" in message and "promises about 40%" in message
    assert "a stack the runtime mishandles (here transformers" in message and "damaged drafter weights" in message
    assert capsys.readouterr().err.count("WARNING: drafter tiny/drafter") == 1
    _, again = generate(pair, PROMPTS, "draft_target", 3, 2, 12)
    assert again.warnings == stats.warnings and capsys.readouterr().err == ""  # in the stats, printed once
    assert stats.to_dict()["warnings"] == [message]


def test_a_wrong_target_comes_first_among_the_causes():
    pair = pair_with(drafter_seed=9, target_ref="other/model", trained_for="tiny/target")
    _, stats = generate(pair, PROMPTS, "draft_target", 3, 1, 12)
    assert "Likely causes: a wrong target (trained for tiny/target, paired with other/model)" in stats.warnings[0]


def test_a_drafter_keeping_its_promise_is_not_reported(capsys):
    _, stats = generate(pair_with(drafter_seed=0), PROMPTS, "draft_target", 3, 2, 12)
    assert stats.acceptance_rate > 0.9 and stats.warnings == ()
    assert "WARNING" not in capsys.readouterr().err


def test_no_judgement_on_a_few_steps_nor_without_a_record():
    _, stats = generate(pair_with(drafter_seed=9), PROMPTS[:1], "draft_target", 3, 1, 8)
    assert stats.seq_steps < MIN_STEPS and stats.warnings == ()
    pair = pair_with(drafter_seed=9)
    pair.drafter.specdeploy_record = None
    assert generate(pair, PROMPTS, "draft_target", 3, 2, 12)[1].warnings == ()


@pytest.mark.parametrize("kind", ["e2e", "acceptance"])
def test_the_tuner_reports_it(kind, capsys):
    from specdeploy.engines.reference.tune import ReferenceBackend
    from specdeploy.tune.setup import TuneSetup
    from specdeploy.tune.types import Request

    setup = TuneSetup("tiny", "draft_target", True, (1, 2), (1, 2, 3), repeats=1, prompts=6, output_len=12)
    backend = ReferenceBackend(None, setup, pair=pair_with(drafter_seed=9), prompts=[("all", p) for p in PROMPTS])
    backend(Request(kind, 2, 3))
    assert "WARNING: drafter tiny/drafter accepted its first draft in" in capsys.readouterr().err


def serve(pair: ModelPair, k_at) -> None:  # type: ignore[no-untyped-def]
    """Every prompt through the server's in-flight loop (what the Triton reference model runs), 12 tokens each."""
    from specdeploy.engines.reference.runtime.serving import InflightLoop
    from tests.unit.runtime.tiny import greedy, run_inflight

    loop = InflightLoop(pair, "draft_target", k_at, 2, 8)
    try:
        run_inflight(loop, [(p, greedy(12), None) for p in PROMPTS])
    finally:
        loop.close()


def test_the_served_loop_reports_a_silent_drafter_once(capsys):
    pair = pair_with(drafter_seed=9)
    serve(pair, lambda _b: 3)
    assert pair.tally.steps >= MIN_STEPS and pair.tally.warning.startswith("drafter tiny/drafter accepted")
    assert capsys.readouterr().err.count("WARNING: drafter tiny/drafter") == 1
    serve(pair, lambda _b: 3)
    assert "WARNING" not in capsys.readouterr().err  # once per loaded pair, however long the server runs


def test_served_steps_that_draft_nothing_count_for_nothing(capsys):
    pair = pair_with(drafter_seed=9)
    serve(pair, lambda _b: 0)  # the schedule turned speculation off: no draft was refused
    assert pair.tally.steps == 0 and pair.tally.warning == ""
    serve(pair_with(drafter_seed=0), lambda _b: 3)
    assert "WARNING" not in capsys.readouterr().err
