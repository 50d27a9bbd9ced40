"""The version scheme (CHANGELOG.md's preamble): the package version is the newest release in CHANGELOG.md, or the
next version's `.devN` between releases; every release section has its date, and a tag line names a commit here."""

from __future__ import annotations

import re
import subprocess
from datetime import date
from pathlib import Path

import pytest
from packaging.version import Version

import specdeploy

ROOT = Path(__file__).resolve().parents[2]
CHANGELOG = (ROOT / "CHANGELOG.md").read_text()
HEADING = re.compile(r"^## \[(?P<name>[^\]]+)\](?: - (?P<date>\S+))?$", re.MULTILINE)
TAG_LINE = re.compile(r"\ATag `v(?P<version>[^`]+)` at commit (?P<commit>[0-9a-f]{7,40})\.\n")
"""A release cut after the fact names the commit its tag goes on (CONTRIBUTING.md, Commits and releases)."""


def _sections() -> list[tuple[str, str | None, str]]:
    """(name, date, body) of every `## [...]` section, in file order."""
    found = list(HEADING.finditer(CHANGELOG))
    ends = [m.start() for m in found[1:]] + [len(CHANGELOG)]
    return [(m["name"], m["date"], CHANGELOG[m.end() : end].strip("\n") + "\n") for m, end in zip(found, ends)]


def _releases() -> list[tuple[Version, date, str | None]]:
    out = []
    for name, day, body in _sections()[1:]:
        tag = TAG_LINE.match(body)
        assert day is not None and (tag is None or tag["version"] == name), (name, body[:80])
        out.append((Version(name), date.fromisoformat(day), tag["commit"] if tag else None))
    return out


def test_the_changelog_opens_with_unreleased_then_releases_newest_first() -> None:
    sections = _sections()
    assert sections[0][:2] == ("Unreleased", None)
    releases = _releases()
    assert releases, "no release section"
    assert [r[0] for r in releases] == sorted((r[0] for r in releases), reverse=True)
    assert [r[1] for r in releases] == sorted((r[1] for r in releases), reverse=True)


def test_the_package_version_is_the_newest_release_or_the_next_ones_dev() -> None:
    version, newest = Version(specdeploy.__version__), _releases()[0][0]
    unreleased = _sections()[0][2].strip()
    if version == newest:
        assert not unreleased, "changes are listed under Unreleased: the version must move on to the next .devN"
    else:
        assert version.is_devrelease and version.release > newest.release, (version, newest)


def test_a_tag_line_names_a_commit_of_this_history() -> None:
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    for version, _, commit in _releases():
        if commit is None:
            continue
        found = subprocess.run(["git", "-C", str(ROOT), "cat-file", "-t", commit], capture_output=True, text=True)
        assert found.stdout.strip() == "commit", f"v{version}: {commit} is not a commit here"
