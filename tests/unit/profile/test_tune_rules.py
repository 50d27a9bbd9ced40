"""`validate`'s tune rules: candidates a fixed draft_len makes `tune` refuse, and tune.concurrency above the batch,
checked only where a build tunes and worded for the command line."""

from __future__ import annotations

from pathlib import Path

from specdeploy.issues import Issue
from tests.helpers import write_profile

BASELINE = (
    "target: {model: meta-llama/Llama-3.1-8B-Instruct}\nhardware: {gpu: h200}\nruntime: {trtllm_version: 1.2.1}\n"
)


def _tune_notes(path: Path, *sets: str) -> list[Issue]:
    from specdeploy.api import validate

    (result,) = validate([str(path)], sets)
    assert result.ok, result.errors
    return [n for n in result.notes if n.dotted == "tune.concurrency"]


def test_validate_warns_of_candidates_a_fixed_draft_len_makes_tune_refuse() -> None:
    from specdeploy.api import validate

    (result,) = validate(["h200-eagle3"], ("speculative.draft_len=3",))
    # `specdeploy tune` then exited 2 on "tune.draft_lens goes up to 8, beyond the engine's max_draft_len 3"
    (note,) = [n for n in result.notes if n.dotted == "tune.draft_lens"]
    assert result.ok and note.severity == "warning" and note.file.endswith("h200-eagle3.yaml")
    assert "beyond draft_len 3" in note.message and note.suggestion.startswith("keep tune.draft_lens <= 3")


def test_validate_catches_a_tune_concurrency_above_the_batch() -> None:
    from specdeploy.api import validate

    sets = ("serving.max_batch_size=1", "tune.concurrency=[2, 4]")
    (result,) = validate(["h200-eagle3"], sets)  # valid; then tune (and build's tune step) exited 2
    (issue,) = result.errors
    assert issue.dotted == "tune.concurrency" and issue.file == "--set"
    assert issue.message == "every tune.concurrency is above serving.max_batch_size 1: nothing to tune"
    (result,) = validate(["h200-eagle3"], ("serving.max_batch_size=4",))
    (note,) = [n for n in result.notes if n.dotted == "tune.concurrency"]
    assert result.ok and note.severity == "warning" and "8, 16, 32, 64 above serving.max_batch_size 4" in note.message


def test_tune_concurrency_is_checked_only_where_a_build_tunes(tmp_path: Path) -> None:
    # a pinned schedule never tunes: "every tune.concurrency is above serving.max_batch_size 8" was an error
    sched = write_profile(
        tmp_path / "sched.yaml",
        "extends: h200-eagle3\nspeculative:\n  schedule: {1: 4, 8: 2}\n"
        "serving:\n  max_batch_size: 8\ntune: {concurrency: [16, 32], draft_lens: null}\n",
    )
    assert [n.severity for n in _tune_notes(sched)] == ["warning"]  # `specdeploy tune` would still refuse it
    none = write_profile(
        tmp_path / "none.yaml",
        BASELINE + "speculative: {mechanism: none}\nserving: {max_batch_size: 8}\ntune: {concurrency: [16, 32]}\n",
    )
    assert _tune_notes(none) == []  # nothing can tune it (`tune` says "mechanism is none")
    # the default list on a baseline warned "64 above serving.max_batch_size 32: tune skips them"
    base32 = write_profile(
        tmp_path / "base32.yaml", BASELINE + "speculative: {mechanism: none}\nserving: {max_batch_size: 32}\n"
    )
    assert _tune_notes(base32) == []


def test_a_partly_skipped_tune_concurrency_warns_only_when_the_user_set_it(tmp_path: Path) -> None:
    mine = write_profile(
        tmp_path / "mine.yaml", BASELINE + "speculative: {mechanism: ngram}\nserving: {max_batch_size: 16}\n"
    )
    assert _tune_notes(mine) == []  # the default list: tune skips 32 and 64 as designed
    (note,) = _tune_notes(mine, "tune.concurrency=[8, 16, 32]")
    assert note.file == "--set" and note.message == "32 above serving.max_batch_size 16: tune skips them"


def test_an_inherited_tune_concurrency_hint_does_not_offer_null_when_the_default_fails_too(tmp_path: Path) -> None:
    child = write_profile(tmp_path / "child.yaml", "extends: h200-eagle3\nserving: {max_batch_size: 16}\n")
    (note,) = _tune_notes(child)
    assert note.file.endswith("h200-eagle3.yaml")
    # "(null drops it)": the default [1, ..., 64] is above 16 as well
    assert note.suggestion == f"drop them or raise serving.max_batch_size; inherited: set tune.concurrency in {child}"


def test_the_draft_lens_hint_says_how_to_fix_it_from_the_command_line() -> None:
    from specdeploy.api import validate

    (result,) = validate(["h200-eagle3"], ("speculative.draft_len=3",))
    (note,) = [n for n in result.notes if n.dotted == "tune.draft_lens"]
    # the warning sits on a line of the shipped file, which the user cannot edit
    assert note.suggestion == "keep tune.draft_lens <= 3 (--set 'tune.draft_lens=[1, 2, 3]'), or set draft_len: auto"
