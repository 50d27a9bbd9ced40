"""Defects a first-contact trial of the CLI found in the profile language (each test failed before its fix)."""

from __future__ import annotations

from pathlib import Path

import pytest

from specdeploy.api import load_and_resolve
from specdeploy.profile.issues import Issue, ProfileError
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
