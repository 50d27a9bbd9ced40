"""`validate` catches what would fail later in tune or build (issue 16, item 8)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specdeploy.api import validate
from tests.helpers import write_profile


def errors(path: Path) -> list[str]:
    (result,) = validate([str(path)])
    return [f"{i.dotted}: {i.message}" + (f" [{i.suggestion}]" if i.suggestion else "") for i in result.errors]


def test_goodput_without_an_sla(tmp_path: Path) -> None:
    path = write_profile(tmp_path / "p.yaml", "extends: h200-eagle3\ntune:\n  objective: goodput\n")
    (message,) = errors(path)
    assert message.startswith("tune.objective: objective goodput needs an SLA") and "p99_itl_ms" in message
    with_sla = write_profile(
        tmp_path / "q.yaml", "extends: h200-eagle3\ntune:\n  objective: goodput\n  sla: {p99_itl_ms: 20}\n"
    )
    assert errors(with_sla) == []


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "dataset file not found"),
        ('{"question_id": 1, "category": "qa", "turns": ["hi"]}\n{not json\n', ":2: not valid JSON"),
        ('{"prompt": "hi"}\n', ":1: missing field(s) question_id, category, turns"),
    ],
)
def test_a_tune_dataset_that_a_tune_could_not_read(tmp_path: Path, content: str | None, expected: str) -> None:
    dataset = tmp_path / "prompts.jsonl"
    if content is not None:
        dataset.write_text(content)
    path = write_profile(tmp_path / "p.yaml", f"extends: h200-eagle3\ntune:\n  dataset: {dataset}\n")
    (message,) = errors(path)
    assert message.startswith("tune.dataset: ") and expected in message


@pytest.mark.parametrize("name", ["x" * 5000, "a\x00b"])
def test_a_dataset_name_the_os_refuses_is_a_located_error_not_a_crash(tmp_path: Path, name: str) -> None:
    data = {"extends": "h200-eagle3", "tune": {"dataset": name}}
    (message,) = errors(write_profile(tmp_path / "p.yaml", data))
    assert message.startswith("tune.dataset: ")


def test_a_non_utf8_dataset_is_an_error(tmp_path: Path) -> None:
    dataset = tmp_path / "latin1.jsonl"
    dataset.write_bytes(b'{"question_id": 1, "category": "\xe9", "turns": ["hi"]}\n')
    (message,) = errors(write_profile(tmp_path / "p.yaml", f"extends: h200-eagle3\ntune:\n  dataset: {dataset}\n"))
    assert message.startswith("tune.dataset: dataset ") and "is not UTF-8 text" in message


def test_a_valid_tune_dataset_passes(tmp_path: Path) -> None:
    dataset = tmp_path / "prompts.jsonl"
    dataset.write_text(json.dumps({"question_id": 1, "category": "qa", "turns": ["hi"]}) + "\n")
    assert errors(write_profile(tmp_path / "p.yaml", f"extends: h200-eagle3\ntune:\n  dataset: {dataset}\n")) == []


def test_an_extends_typo_gets_a_suggestion_and_nothing_spurious(tmp_path: Path) -> None:
    (message,) = errors(write_profile(tmp_path / "p.yaml", "extends: h200-eagle\n"))
    assert message == "extends: extends 'h200-eagle': no such file or shipped profile [did you mean 'h200-eagle3'?]"
    write_profile(tmp_path / "base-profile.yaml", "target: {model: m}\n")
    (message,) = errors(write_profile(tmp_path / "q.yaml", "extends: base-profil.yaml\n"))
    assert message.endswith("[did you mean 'base-profile.yaml'?]")  # `extends: base-profile` is not found


def test_a_mistyped_mechanism_is_reported_once_with_the_right_advice(tmp_path: Path) -> None:
    path = write_profile(tmp_path / "p.yaml", "extends: h200-eagle3\nspeculative:\n  mechanism: eagle-3\n")
    (message,) = errors(path)  # not also "mechanism 'eagle-3' does not use a draft_model [remove it]"
    assert message.startswith("speculative.mechanism: unknown mechanism 'eagle-3'")
    assert message.endswith("[did you mean 'eagle3'?]")
    ngram = write_profile(tmp_path / "q.yaml", "extends: h200-eagle3\nspeculative:\n  mechanism: ngram\n")
    assert any("does not use a draft_model" in m for m in errors(ngram))  # a known mechanism still gets it
