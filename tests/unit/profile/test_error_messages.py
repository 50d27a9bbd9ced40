"""Defects a first-contact trial of the CLI found in the profile language (each test failed before its fix)."""

from __future__ import annotations

from pathlib import Path

import pytest

from specdeploy.api import load_and_resolve
from specdeploy.issues import Issue, ProfileError
from tests.helpers import write_profile

BASE = "target:\n  model: meta-llama/Llama-3.1-8B-Instruct\n"


def errors_of(path: Path, *sets: str) -> list[Issue]:
    with pytest.raises(ProfileError) as info:
        load_and_resolve(str(path), sets)
    return info.value.issues


def test_a_set_list_is_located_at_the_set_not_at_the_list_it_replaced(tmp_path: Path) -> None:
    path = write_profile(tmp_path / "p.yaml", BASE + "tune:\n  concurrency: [1, 2, 4, 8]\n")
    (issue,) = errors_of(path, "tune.concurrency=[1, 2, x]")
    # it pointed at p.yaml:4 and quoted `concurrency: [1, 2, 4, 8]`, a line that holds no `x`
    assert issue.file == "--set" and issue.line is None and issue.snippet is None
    assert issue.dotted == "tune.concurrency.2"


def test_a_value_inside_a_set_mapping_comes_from_the_set(tmp_path: Path) -> None:
    from specdeploy.profile.loader import load_profile

    path = write_profile(tmp_path / "p.yaml", BASE + "hardware:\n  gpu: h200\n")
    loaded = load_profile(str(path), ("tune.sla={p99_itl_ms: 20}",))
    assert loaded.source_of(("tune", "sla", "p99_itl_ms")) == "--set"  # `plan` said "default"
    assert loaded.source_of(("hardware", "count")) == "default"  # a default inside a section the file gave


@pytest.mark.parametrize(("value", "detail"), [("4.5", "got a number with a fractional part"), ("[1]", "")])
def test_an_int_or_auto_slot_reports_one_error_at_its_key(tmp_path: Path, value: str, detail: str) -> None:
    path = write_profile(tmp_path / "p.yaml", BASE + f"speculative:\n  mechanism: ngram\n  draft_len: {value}\n")
    (issue,) = errors_of(path)  # two, at `speculative.draft_len.int` and `speculative.draft_len.literal['auto']`
    assert issue.dotted == "speculative.draft_len" and (issue.line, issue.col) == (5, 3)
    assert issue.message.startswith("Input should be an integer or 'auto'") and detail in issue.message


def test_a_near_miss_of_auto_is_suggested(tmp_path: Path) -> None:
    path = write_profile(tmp_path / "p.yaml", BASE + "speculative:\n  mechanism: ngram\n  draft_len: aut\n"
                         "tune:\n  parallel: atuo\n")
    issues = errors_of(path)
    assert [(i.dotted, i.suggestion) for i in issues] == [("speculative.draft_len", "did you mean 'auto'?"),
                                                          ("tune.parallel", "did you mean 'auto'?")]


def test_an_unknown_key_named_like_a_union_member_stays_an_unknown_key(tmp_path: Path) -> None:
    path = write_profile(tmp_path / "p.yaml", BASE + "serving:\n  int: 3\n")
    (issue,) = errors_of(path)
    assert issue.dotted == "serving.int" and issue.message == "unknown key 'int'"


def test_a_file_not_named_like_a_profile_is_not_called_empty(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("secret:x:0:0:/bin/sh\nsecret-too:x:1:1\n")
    (issue,) = errors_of(notes)  # "empty profile" (its lines are kept out of messages, and that emptied the check)
    assert "a profile must be a mapping" in issue.message and "secret" not in issue.render()
    assert "empty profile" in errors_of(write_profile(tmp_path / "blank.txt", "# nothing\n"))[0].message


def test_set_of_a_string_key_takes_the_text_as_written(tmp_path: Path) -> None:
    from specdeploy.profile.loader import load_profile

    path = write_profile(tmp_path / "p.yaml", BASE + "hardware:\n  gpu: h200\n")
    # `1.3` was the YAML float 1.3: "Input should be a valid string (got 1.3)", with nothing to type instead
    assert load_profile(str(path), ("runtime.trtllm_version=1.3",)).profile.runtime.trtllm_version == "1.3"
    assert load_profile(str(path), ("deploy.name=2024",)).profile.deploy.name == "2024"
    (issue,) = errors_of(path, "serving.max_seq_len=1.5")  # a number slot is untouched
    assert "valid integer" in issue.message


def test_a_number_in_a_string_slot_says_to_quote_it(tmp_path: Path) -> None:
    path = write_profile(tmp_path / "p.yaml", BASE + "runtime:\n  trtllm_version: 1.3\n")
    (issue,) = errors_of(path)
    assert issue.dotted == "runtime.trtllm_version" and issue.suggestion == "quote it: '1.3'"


def test_a_child_can_switch_the_mechanism_of_the_profile_it_extends(tmp_path: Path) -> None:
    from specdeploy.profile.loader import load_profile

    # h200-eagle3 sets speculative.options.one_model and a draft_model: a child switching to ngram inherited both,
    # and `options: {}` merges, `options: null` was "Input should be a valid dictionary": no way out
    child = write_profile(tmp_path / "mine.yaml", "extends: h200-eagle3\nspeculative:\n  mechanism: ngram\n"
                          "  draft_model: null\n  options: null\n")
    loaded = load_profile(str(child))
    assert loaded.profile.speculative.mechanism == "ngram" and loaded.profile.speculative.options == {}
    assert loaded.source_of(("speculative", "options", "one_model")) == "default"


def test_an_error_inherited_from_a_parent_says_how_to_override_it(tmp_path: Path) -> None:
    child = write_profile(tmp_path / "mine.yaml", "extends: h200-eagle3\nspeculative:\n  mechanism: ngram\n"
                          "  draft_model: null\n")
    (issue,) = errors_of(child)
    assert issue.dotted == "speculative.options.one_model" and issue.file.endswith("h200-eagle3.yaml")
    assert issue.suggestion == f"valid keys: max_matching_ngram_size, is_keep_all, is_use_oldest, is_public_pool; " \
        f"inherited: set speculative.options.one_model in {child} (null drops it)"


@pytest.mark.parametrize("key", ["serving..max_seq_len", "serving.max_seq_len.", ".serving.max_seq_len"])
def test_set_with_an_empty_key_part_is_refused(tmp_path: Path, key: str) -> None:
    path = write_profile(tmp_path / "p.yaml", BASE)
    (issue,) = errors_of(path, f"{key}=2048")  # it set serving.max_seq_len
    assert issue.file == "--set" and "an empty key" in issue.message


def test_a_misspelt_shipped_profile_is_suggested(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (issue,) = errors_of(Path("h200-eagle"))
    assert issue.message == "file not found" and issue.suggestion == "did you mean 'h200-eagle3'?"


def test_a_tab_indent_says_to_use_spaces(tmp_path: Path) -> None:
    (issue,) = errors_of(write_profile(tmp_path / "p.yaml", "target:\n\tmodel: m\n"))
    assert (issue.line, issue.col) == (2, 1) and issue.suggestion == "indent with spaces: YAML does not allow tabs"


def test_a_schedule_key_that_is_not_a_number_is_named_as_a_key(tmp_path: Path) -> None:
    path = write_profile(tmp_path / "p.yaml", BASE + "speculative:\n  mechanism: ngram\n  draft_len: 4\n"
                         "  schedule: {1: 4, many: 2}\n")
    (issue,) = errors_of(path)  # it was at `speculative.schedule.many.[key]`
    assert issue.dotted == "speculative.schedule.many" and issue.message.startswith("key: Input should be a valid")
    assert issue.line == 6


def test_a_mapping_only_set_gave_is_located_at_the_set(tmp_path: Path) -> None:
    path = write_profile(tmp_path / "p.yaml", BASE + "speculative:\n  mechanism: ngram\n  draft_len: 4\n")
    (issue,) = errors_of(path, "speculative.schedule.8=2")  # it quoted the file's `speculative:` line
    assert issue.file == "--set" and issue.dotted == "speculative.schedule" and issue.line is None


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


def test_a_yaml_error_says_where_the_construct_began(tmp_path: Path) -> None:
    path = write_profile(tmp_path / "p.yaml", "target: {model: m\nhardware: {gpu: h200}\n")
    (issue,) = errors_of(path)  # only "expected ',' or '}', but got ':'" at 2:9; the `{` left open is on line 1
    assert (issue.line, issue.col) == (2, 9) and "while parsing a flow mapping that began at line 1, column 9" \
        in issue.message


def test_a_set_value_that_is_not_yaml_is_one_line(tmp_path: Path) -> None:
    path = write_profile(tmp_path / "p.yaml", BASE)
    (issue,) = errors_of(path, "tune.concurrency=[1, 2")
    assert "\n" not in issue.message and "<unicode string>" not in issue.message  # the parser's 8-line dump
    assert issue.message == "--set value '[1, 2' is not valid YAML: expected ',' or ']', but got '<stream end>' " \
        "(column 6)"


def test_a_suggested_sibling_is_its_file_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_profile(tmp_path / "base-prof.yaml", BASE)
    child = write_profile(tmp_path / "child.yaml", "extends: base-prf\n")
    (issue,) = errors_of(child)  # "did you mean 'base-prof'?", and `extends: base-prof` is not found either
    assert issue.suggestion == "did you mean 'base-prof.yaml'?"
    monkeypatch.chdir(tmp_path)
    assert errors_of(Path("base-prf.yaml"))[0].suggestion == "did you mean 'base-prof.yaml'?"


def test_a_folder_says_to_pass_its_files(tmp_path: Path) -> None:
    (issue,) = errors_of(tmp_path)
    assert issue.message == "is a directory, not a profile file"
    assert issue.suggestion == f"pass its profiles: {tmp_path}/*.yaml (shipped ones: profiles/*/*.yaml)"
