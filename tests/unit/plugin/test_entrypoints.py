"""The fast entry-point reader finds what importlib.metadata finds, and leaves it anything unusual."""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path

import pytest

from specdeploy.plugin.entrypoints import EntryPoint, _scan, entry_points


@pytest.mark.parametrize("group", ["specdeploy.mechanisms", "console_scripts", "pytest11", "distutils.commands"])
def test_same_entry_points_in_the_same_order_as_importlib_metadata(group: str) -> None:
    expected = [(ep.name, ep.value) for ep in importlib.metadata.entry_points(group=group)]
    found = _scan(group)
    assert found is not None and [(ep.name, ep.value) for ep in found] == expected


def dist(site: Path, folder: str, text: str) -> None:
    (site / folder).mkdir(parents=True)
    (site / folder / "entry_points.txt").write_text(text)


def test_first_distribution_of_a_name_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    dist(first, "My.Pkg-1.0.dist-info", "# comment\n[g]\n one = pkg.mod:Obj\n[other]\nx = y\n")
    dist(second, "my_pkg-2.0.dist-info", "[g]\ntwo = pkg.mod:Other\n")
    dist(second, "else-1.0.egg-info", "[g]\nthree = pkg:Third [extra]\n")
    monkeypatch.setattr(sys, "path", [str(first), str(second), str(tmp_path / "missing")])
    assert entry_points("g") == [EntryPoint("one", "pkg.mod:Obj"), EntryPoint("three", "pkg:Third [extra]")]
    assert [(ep.name, ep.value) for ep in importlib.metadata.entry_points(group="g")] == [
        ("one", "pkg.mod:Obj"),
        ("three", "pkg:Third [extra]"),
    ]


@pytest.mark.parametrize("case", ["zip", "malformed", "upper"])
def test_anything_unusual_goes_to_importlib_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    if case == "zip":
        (tmp_path / "deps.zip").write_bytes(b"PK\x05\x06" + bytes(18))
        monkeypatch.setattr(sys, "path", [str(tmp_path / "deps.zip")])
    else:
        folder = "pkg-1.0.DIST-INFO" if case == "upper" else "pkg-1.0.dist-info"
        dist(tmp_path, folder, "[g]\nno equals sign\n" if case == "malformed" else "[g]\na = b:c\n")
        monkeypatch.setattr(sys, "path", [str(tmp_path)])
    assert _scan("g") is None


def test_load_follows_module_and_attribute_path() -> None:
    assert EntryPoint("x", "specdeploy.plugin.base:Mechanism.supports [extra]").load().__name__ == "supports"
    assert EntryPoint("x", "specdeploy.plugin.entrypoints").load().__name__ == "specdeploy.plugin.entrypoints"
