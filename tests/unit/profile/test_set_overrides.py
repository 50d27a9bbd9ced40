"""Defects a review of the first-contact trial's fixes found (each test failed before its fix)."""

from __future__ import annotations

from pathlib import Path

import pytest

from specdeploy.issues import Issue
from specdeploy.profile.loader import load_profile
from tests.helpers import write_profile

K8S_PARENT = "extends: h200-eagle3\ndeploy:\n  targets: [k8s]\n  kubernetes:\n    namespace: llm\n"


def test_a_child_null_keeps_none_where_the_field_means_something_by_it(tmp_path: Path) -> None:
    write_profile(tmp_path / "parent.yaml", K8S_PARENT)
    child = write_profile(tmp_path / "child.yaml", "extends: parent.yaml\ndeploy:\n  kubernetes:\n"
                          "    hf_token_secret: null\n")
    loaded = load_profile(str(child))
    # `null` is "no token" here; the merge dropped it and the default secret `hf-token` came back
    assert loaded.profile.deploy.kubernetes.hf_token_secret is None
    assert loaded.source_of(("deploy", "kubernetes", "hf_token_secret")) == f"{child}:4"


def test_a_child_null_drops_a_non_nullable_value_at_any_depth(tmp_path: Path) -> None:
    # h200-eagle3 has no `triton:` section: `layout: null` was kept and refused, `serving.max_batch_size: null`
    # (a section the parent has) was dropped
    child = write_profile(tmp_path / "child.yaml", "extends: h200-eagle3\ntriton:\n  layout: null\n"
                          "serving:\n  max_batch_size: null\n")
    loaded = load_profile(str(child))
    assert loaded.profile.serving.max_batch_size == 64 and loaded.profile.triton.layout == "auto"
    assert loaded.source_of(("serving", "max_batch_size")) == "default"  # plan said child.yaml:5
    assert loaded.source_of(("triton", "layout")) == "default"


def test_a_childs_schedule_replaces_its_parents(tmp_path: Path) -> None:
    """A schedule is one table: merged key by key, the child's {1: 4, 8: 2} over the parent's {1: 3, 16: 1} served
    K = 1 from 16 rows on, a row the child never wrote."""
    write_profile(tmp_path / "parent.yaml", "extends: h200-eagle3\nspeculative:\n  schedule: {1: 3, 16: 1}\n")
    child = write_profile(tmp_path / "child.yaml", "extends: parent.yaml\nspeculative:\n  schedule: {1: 4, 8: 2}\n")
    loaded = load_profile(str(child))
    assert loaded.profile.speculative.schedule == {1: 4, 8: 2}
    assert loaded.source_of(("speculative", "schedule", 16)) != f"{tmp_path / 'parent.yaml'}:3"
    options = write_profile(tmp_path / "options.yaml", "extends: parent.yaml\nspeculative:\n  options: {}\n")
    assert load_profile(str(options)).profile.speculative.schedule == {1: 3, 16: 1}  # untouched, inherited


def _tune_notes(path: Path, *sets: str) -> list[Issue]:
    from specdeploy.api import validate

    (result,) = validate([str(path)], sets)
    assert result.ok, result.errors
    return [n for n in result.notes if n.dotted == "tune.concurrency"]


BASELINE = ("target: {model: meta-llama/Llama-3.1-8B-Instruct}\nhardware: {gpu: h200}\n"
            "runtime: {trtllm_version: 1.2.1}\n")


def test_tune_concurrency_is_checked_only_where_a_build_tunes(tmp_path: Path) -> None:
    # a pinned schedule never tunes: "every tune.concurrency is above serving.max_batch_size 8" was an error
    sched = write_profile(tmp_path / "sched.yaml", "extends: h200-eagle3\nspeculative:\n  schedule: {1: 4, 8: 2}\n"
                          "serving:\n  max_batch_size: 8\ntune: {concurrency: [16, 32], draft_lens: null}\n")
    assert [n.severity for n in _tune_notes(sched)] == ["warning"]  # `specdeploy tune` would still refuse it
    none = write_profile(tmp_path / "none.yaml", BASELINE + "speculative: {mechanism: none}\n"
                         "serving: {max_batch_size: 8}\ntune: {concurrency: [16, 32]}\n")
    assert _tune_notes(none) == []  # nothing can tune it (`tune` says "mechanism is none")
    # the default list on a baseline warned "64 above serving.max_batch_size 32: tune skips them"
    base32 = write_profile(tmp_path / "base32.yaml", BASELINE + "speculative: {mechanism: none}\n"
                           "serving: {max_batch_size: 32}\n")
    assert _tune_notes(base32) == []


def test_a_partly_skipped_tune_concurrency_warns_only_when_the_user_set_it(tmp_path: Path) -> None:
    mine = write_profile(tmp_path / "mine.yaml", BASELINE + "speculative: {mechanism: ngram}\n"
                         "serving: {max_batch_size: 16}\n")
    assert _tune_notes(mine) == []  # the default list: tune skips 32 and 64 as designed
    (note,) = _tune_notes(mine, "tune.concurrency=[8, 16, 32]")
    assert note.file == "--set" and note.message == "32 above serving.max_batch_size 16: tune skips them"


def test_an_inherited_tune_concurrency_hint_does_not_offer_null_when_the_default_fails_too(tmp_path: Path) -> None:
    child = write_profile(tmp_path / "child.yaml", "extends: h200-eagle3\nserving: {max_batch_size: 16}\n")
    (note,) = _tune_notes(child)
    assert note.file.endswith("h200-eagle3.yaml")
    # "(null drops it)": the default [1, ..., 64] is above 16 as well
    assert note.suggestion == f"drop them or raise serving.max_batch_size; inherited: set tune.concurrency in {child}"


@pytest.mark.parametrize(("line", "typed"), [("target:\n  model: m\n  revision: 0755\n", "0755"),
                                            ("runtime:\n  trtllm_version: 1.10\n", "1.10")])
def test_the_quote_it_hint_quotes_what_was_typed(tmp_path: Path, line: str, typed: str) -> None:
    from specdeploy.issues import ProfileError

    path = write_profile(tmp_path / "p.yaml", line if line.startswith("target") else "target:\n  model: m\n" + line)
    with pytest.raises(ProfileError) as info:
        load_profile(str(path))
    (issue,) = info.value.issues
    assert issue.suggestion == f"quote it: '{typed}'"  # "quote it: '493'", "quote it: '1.1'"


@pytest.mark.parametrize("text", ["EAGLE-3: fast", "#1 pick", "[draft] fast", "a: b: c"])
def test_set_of_a_string_key_takes_the_text_as_typed(tmp_path: Path, text: str) -> None:
    # a mapping was refused, a comment set None, `a: b: c` was "not valid YAML"
    loaded = load_profile(str(write_profile(tmp_path / "p.yaml", BASELINE)), (f"description={text}",))
    assert loaded.profile.description == text


def test_set_false_on_a_string_key_is_a_type_error(tmp_path: Path) -> None:
    from specdeploy.issues import ProfileError

    path = write_profile(tmp_path / "p.yaml", BASELINE)
    with pytest.raises(ProfileError) as info:  # it named the secret "false"
        load_profile(str(path), ("deploy.kubernetes.hf_token_secret=false",))
    (issue,) = info.value.issues
    assert issue.file == "--set" and issue.dotted == "deploy.kubernetes.hf_token_secret"
    assert load_profile(str(path), ("deploy.kubernetes.hf_token_secret=null",)).profile.deploy.kubernetes \
        .hf_token_secret is None  # null is "no token" here


def test_set_null_drops_a_key_that_cannot_be_null_as_extends_does() -> None:
    loaded = load_profile("h200-eagle3", ("speculative.options=null", "speculative.mechanism=ngram",
                                          "speculative.draft_model=null"))  # options=null was a type error
    assert loaded.profile.speculative.options == {} and loaded.source_of(("speculative", "options")) == "default"
    assert load_profile("h200-eagle3", ("serving.max_batch_size=null",)).profile.serving.max_batch_size == 64


def test_a_missing_profile_in_a_folder_suggests_its_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from specdeploy.issues import ProfileError

    write_profile(tmp_path / "sub" / "myprofile.yaml", BASELINE)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ProfileError) as info:
        load_profile("sub/myprofle.yaml")
    # 'myprofile.yaml', which is not found from the current folder either
    assert info.value.issues[0].suggestion == "did you mean 'sub/myprofile.yaml'?"


def test_only_keys_a_set_mapping_holds_come_from_the_set() -> None:
    loaded = load_profile("h200-eagle3", ("tune={concurrency: [1]}",))
    assert loaded.source_of(("tune", "concurrency")) == "--set"
    assert loaded.source_of(("tune", "concurrency", 0)) == "--set"
    assert loaded.source_of(("tune", "dataset")) == "default"  # it said "--set"


def test_the_draft_lens_hint_says_how_to_fix_it_from_the_command_line() -> None:
    from specdeploy.api import validate

    (result,) = validate(["h200-eagle3"], ("speculative.draft_len=3",))
    (note,) = [n for n in result.notes if n.dotted == "tune.draft_lens"]
    # the warning sits on a line of the shipped file, which the user cannot edit
    assert note.suggestion == "keep tune.draft_lens <= 3 (--set 'tune.draft_lens=[1, 2, 3]'), or set draft_len: auto"
