"""`--set KEY=VALUE`: typed by the key it sets, located at the `--set` (not at the file line it replaced), a string key
taking the text as typed, `null` dropping what cannot be null."""

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


def test_a_set_list_is_located_at_the_set_not_at_the_list_it_replaced(tmp_path: Path) -> None:
    path = write_profile(tmp_path / "p.yaml", BASE + "tune:\n  concurrency: [1, 2, 4, 8]\n")
    (issue,) = profile_errors(path, "tune.concurrency=[1, 2, x]")
    # it pointed at p.yaml:4 and quoted `concurrency: [1, 2, 4, 8]`, a line that holds no `x`
    assert issue.file == "--set" and issue.line is None and issue.snippet is None
    assert issue.dotted == "tune.concurrency.2"


def test_a_value_inside_a_set_mapping_comes_from_the_set(tmp_path: Path) -> None:
    from specdeploy.profile.loader import load_profile

    path = write_profile(tmp_path / "p.yaml", BASE + "hardware:\n  gpu: h200\n")
    loaded = load_profile(str(path), ("tune.sla={p99_itl_ms: 20}",))
    assert loaded.source_of(("tune", "sla", "p99_itl_ms")) == "--set"  # `plan` said "default"
    assert loaded.source_of(("hardware", "count")) == "default"  # a default inside a section the file gave


def test_set_of_a_string_key_takes_the_text_as_written(tmp_path: Path) -> None:
    from specdeploy.profile.loader import load_profile

    path = write_profile(tmp_path / "p.yaml", BASE + "hardware:\n  gpu: h200\n")
    # `1.3` was the YAML float 1.3: "Input should be a valid string (got 1.3)", with nothing to type instead
    assert load_profile(str(path), ("runtime.trtllm_version=1.3",)).profile.runtime.trtllm_version == "1.3"
    assert load_profile(str(path), ("deploy.name=2024",)).profile.deploy.name == "2024"
    (issue,) = profile_errors(path, "serving.max_seq_len=1.5")  # a number slot is untouched
    assert "valid integer" in issue.message


@pytest.mark.parametrize("key", ["serving..max_seq_len", "serving.max_seq_len.", ".serving.max_seq_len"])
def test_set_with_an_empty_key_part_is_refused(tmp_path: Path, key: str) -> None:
    path = write_profile(tmp_path / "p.yaml", BASE)
    (issue,) = profile_errors(path, f"{key}=2048")  # it set serving.max_seq_len
    assert issue.file == "--set" and "an empty key" in issue.message


def test_a_mapping_only_set_gave_is_located_at_the_set(tmp_path: Path) -> None:
    path = write_profile(tmp_path / "p.yaml", BASE + "speculative:\n  mechanism: ngram\n  draft_len: 4\n")
    (issue,) = profile_errors(path, "speculative.schedule.8=2")  # it quoted the file's `speculative:` line
    assert issue.file == "--set" and issue.dotted == "speculative.schedule" and issue.line is None


def test_a_set_value_that_is_not_yaml_is_one_line(tmp_path: Path) -> None:
    path = write_profile(tmp_path / "p.yaml", BASE)
    (issue,) = profile_errors(path, "tune.concurrency=[1, 2")
    assert "\n" not in issue.message and "<unicode string>" not in issue.message  # the parser's 8-line dump
    assert (
        issue.message == "--set value '[1, 2' is not valid YAML: expected ',' or ']', but got '<stream end>' (column 6)"
    )


@pytest.mark.parametrize("text", ["EAGLE-3: fast", "#1 pick", "[draft] fast", "a: b: c"])
def test_set_of_a_string_key_takes_the_text_as_typed(tmp_path: Path, text: str) -> None:
    # a mapping was refused, a comment set None, `a: b: c` was "not valid YAML"
    loaded = load_profile(str(write_profile(tmp_path / "p.yaml", BASELINE)), (f"description={text}",))
    assert loaded.profile.description == text


def test_set_false_on_a_string_key_is_a_type_error(tmp_path: Path) -> None:

    path = write_profile(tmp_path / "p.yaml", BASELINE)
    with pytest.raises(ProfileError) as info:  # it named the secret "false"
        load_profile(str(path), ("deploy.kubernetes.hf_token_secret=false",))
    (issue,) = info.value.issues
    assert issue.file == "--set" and issue.dotted == "deploy.kubernetes.hf_token_secret"
    assert (
        load_profile(str(path), ("deploy.kubernetes.hf_token_secret=null",)).profile.deploy.kubernetes.hf_token_secret
        is None
    )  # null is "no token" here


def test_set_null_drops_a_key_that_cannot_be_null_as_extends_does() -> None:
    loaded = load_profile(
        "h200-eagle3", ("speculative.options=null", "speculative.mechanism=ngram", "speculative.draft_model=null")
    )  # options=null was a type error
    assert loaded.profile.speculative.options == {} and loaded.source_of(("speculative", "options")) == "default"
    assert load_profile("h200-eagle3", ("serving.max_batch_size=null",)).profile.serving.max_batch_size == 64


def test_only_keys_a_set_mapping_holds_come_from_the_set() -> None:
    loaded = load_profile("h200-eagle3", ("tune={concurrency: [1]}",))
    assert loaded.source_of(("tune", "concurrency")) == "--set"
    assert loaded.source_of(("tune", "concurrency", 0)) == "--set"
    assert loaded.source_of(("tune", "dataset")) == "default"  # it said "--set"
