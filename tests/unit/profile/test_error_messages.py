"""A profile error says where it is and how to fix it: one error per key, a near miss suggested, YAML and file problems
named plainly (each test failed before its fix)."""

from __future__ import annotations

from pathlib import Path

import pytest

from specdeploy.issues import ProfileError
from specdeploy.profile.loader import load_profile
from tests.helpers import profile_errors, write_profile

BASE = "target:\n  model: meta-llama/Llama-3.1-8B-Instruct\n"

BASELINE = (
    "target: {model: meta-llama/Llama-3.1-8B-Instruct}\nhardware: {gpu: h200}\nruntime: {trtllm_version: 1.2.1}\n"
)


@pytest.mark.parametrize(("value", "detail"), [("4.5", "got a number with a fractional part"), ("[1]", "")])
def test_an_int_or_auto_slot_reports_one_error_at_its_key(tmp_path: Path, value: str, detail: str) -> None:
    path = write_profile(tmp_path / "p.yaml", BASE + f"speculative:\n  mechanism: ngram\n  draft_len: {value}\n")
    (issue,) = profile_errors(path)  # two, at `speculative.draft_len.int` and `speculative.draft_len.literal['auto']`
    assert issue.dotted == "speculative.draft_len" and (issue.line, issue.col) == (5, 3)
    assert issue.message.startswith("Input should be an integer or 'auto'") and detail in issue.message


def test_a_near_miss_of_auto_is_suggested(tmp_path: Path) -> None:
    path = write_profile(
        tmp_path / "p.yaml", BASE + "speculative:\n  mechanism: ngram\n  draft_len: aut\ntune:\n  parallel: atuo\n"
    )
    issues = profile_errors(path)
    assert [(i.dotted, i.suggestion) for i in issues] == [
        ("speculative.draft_len", "did you mean 'auto'?"),
        ("tune.parallel", "did you mean 'auto'?"),
    ]


def test_an_unknown_key_named_like_a_union_member_stays_an_unknown_key(tmp_path: Path) -> None:
    path = write_profile(tmp_path / "p.yaml", BASE + "serving:\n  int: 3\n")
    (issue,) = profile_errors(path)
    assert issue.dotted == "serving.int" and issue.message == "unknown key 'int'"


def test_a_file_not_named_like_a_profile_is_not_called_empty(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("secret:x:0:0:/bin/sh\nsecret-too:x:1:1\n")
    (issue,) = profile_errors(notes)  # "empty profile" (its lines are kept out of messages, and that emptied the check)
    assert "a profile must be a mapping" in issue.message and "secret" not in issue.render()
    assert "empty profile" in profile_errors(write_profile(tmp_path / "blank.txt", "# nothing\n"))[0].message


def test_a_number_in_a_string_slot_says_to_quote_it(tmp_path: Path) -> None:
    path = write_profile(tmp_path / "p.yaml", BASE + "runtime:\n  trtllm_version: 1.3\n")
    (issue,) = profile_errors(path)
    assert issue.dotted == "runtime.trtllm_version" and issue.suggestion == "quote it: '1.3'"


def test_a_misspelt_shipped_profile_is_suggested(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (issue,) = profile_errors(Path("h200-eagle"))
    assert issue.message == "file not found" and issue.suggestion == "did you mean 'h200-eagle3'?"


def test_a_tab_indent_says_to_use_spaces(tmp_path: Path) -> None:
    (issue,) = profile_errors(write_profile(tmp_path / "p.yaml", "target:\n\tmodel: m\n"))
    assert (issue.line, issue.col) == (2, 1) and issue.suggestion == "indent with spaces: YAML does not allow tabs"


def test_a_schedule_key_that_is_not_a_number_is_named_as_a_key(tmp_path: Path) -> None:
    path = write_profile(
        tmp_path / "p.yaml", BASE + "speculative:\n  mechanism: ngram\n  draft_len: 4\n  schedule: {1: 4, many: 2}\n"
    )
    (issue,) = profile_errors(path)  # it was at `speculative.schedule.many.[key]`
    assert issue.dotted == "speculative.schedule.many" and issue.message.startswith("key: Input should be a valid")
    assert issue.line == 6


def test_a_yaml_error_says_where_the_construct_began(tmp_path: Path) -> None:
    path = write_profile(tmp_path / "p.yaml", "target: {model: m\nhardware: {gpu: h200}\n")
    (issue,) = profile_errors(path)  # only "expected ',' or '}', but got ':'" at 2:9; the `{` left open is on line 1
    assert (issue.line, issue.col) == (
        2,
        9,
    ) and "while parsing a flow mapping that began at line 1, column 9" in issue.message


def test_a_suggested_sibling_is_its_file_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_profile(tmp_path / "base-prof.yaml", BASE)
    child = write_profile(tmp_path / "child.yaml", "extends: base-prf\n")
    (issue,) = profile_errors(child)  # "did you mean 'base-prof'?", and `extends: base-prof` is not found either
    assert issue.suggestion == "did you mean 'base-prof.yaml'?"
    monkeypatch.chdir(tmp_path)
    assert profile_errors(Path("base-prf.yaml"))[0].suggestion == "did you mean 'base-prof.yaml'?"


def test_a_folder_says_to_pass_its_files(tmp_path: Path) -> None:
    (issue,) = profile_errors(tmp_path)
    assert issue.message == "is a directory, not a profile file"
    assert issue.suggestion == f"pass its profiles: {tmp_path}/*.yaml (shipped ones: profiles/*/*.yaml)"


@pytest.mark.parametrize(
    ("line", "typed"),
    [("target:\n  model: m\n  revision: 0755\n", "0755"), ("runtime:\n  trtllm_version: 1.10\n", "1.10")],
)
def test_the_quote_it_hint_quotes_what_was_typed(tmp_path: Path, line: str, typed: str) -> None:

    path = write_profile(tmp_path / "p.yaml", line if line.startswith("target") else "target:\n  model: m\n" + line)
    with pytest.raises(ProfileError) as info:
        load_profile(str(path))
    (issue,) = info.value.issues
    assert issue.suggestion == f"quote it: '{typed}'"  # "quote it: '493'", "quote it: '1.1'"


def test_a_missing_profile_in_a_folder_suggests_its_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:

    write_profile(tmp_path / "sub" / "myprofile.yaml", BASELINE)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ProfileError) as info:
        load_profile("sub/myprofle.yaml")
    # 'myprofile.yaml', which is not found from the current folder either
    assert info.value.issues[0].suggestion == "did you mean 'sub/myprofile.yaml'?"
