"""A step's code hash covers its package (subpackages included) and the packages that shape its output, so a
change anywhere in the code a step runs rebuilds it."""

from __future__ import annotations

from pathlib import Path

import pytest

from specdeploy.execute.actions import ACTIONS, CODE_INPUTS, code_hash


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_subpackages_and_code_inputs_change_the_hash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "fakestep" / "__init__.py", "")
    write(tmp_path / "fakestep" / "actions.py", "def run(ctx):\n    return {}\n")
    write(tmp_path / "fakestep" / "backends" / "__init__.py", "")
    write(tmp_path / "fakestep" / "backends" / "measure.py", "X = 1\n")
    write(tmp_path / "fakedep" / "__init__.py", "")
    write(tmp_path / "fakedep" / "core.py", "Y = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(ACTIONS, "fake", "fakestep.actions:run")
    monkeypatch.setitem(CODE_INPUTS, "fake", ("fakedep",))
    first = code_hash("fake")
    write(tmp_path / "fakestep" / "backends" / "measure.py", "X = 2\n")
    second = code_hash("fake")
    write(tmp_path / "fakedep" / "core.py", "Y = 2\n")
    third = code_hash("fake")
    assert len({first, second, third}) == 3 and code_hash("fake") == third
    monkeypatch.setitem(CODE_INPUTS, "fake", ("fakedep_not_installed",))
    assert code_hash("fake") == "missing:fakedep_not_installed"


def test_the_tune_step_hashes_the_runtime_it_measures_with(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "specdeploy.engines" in CODE_INPUTS["tune"]  # every engine it may measure with
    with_inputs = code_hash("tune")
    monkeypatch.setitem(CODE_INPUTS, "tune", ())
    assert code_hash("tune") != with_inputs
