"""`profiles copy` never writes through a symbolic link at DEST to a file outside DEST (issue 30 item 10)."""

from __future__ import annotations

from pathlib import Path

import pytest

from specdeploy.profile.shipped import shipped_profiles
from tests.helpers import cli


@pytest.mark.parametrize("dest", ["mine.yaml", "folder"])
def test_force_replaces_a_link_at_dest_and_leaves_its_target_alone(
    tmp_path: Path, dest: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: `--force` wrote the profile into the link's target (any file the user could write)."""
    outside = tmp_path / "outside.txt"
    outside.write_text("someone else's file\n")
    link = tmp_path / "mine.yaml" if dest == "mine.yaml" else tmp_path / "folder" / "h100-ngram.yaml"
    link.parent.mkdir(exist_ok=True)
    link.symlink_to(outside)
    monkeypatch.chdir(tmp_path)
    exists = cli("profiles", "copy", "h100-ngram", dest)
    assert exists.code == 2  # --force needed
    result = cli("profiles", "copy", "h100-ngram", dest, "--force")
    assert result.code == 0, result.err
    assert outside.read_text() == "someone else's file\n"
    assert not link.is_symlink() and link.read_text() == shipped_profiles()["h100-ngram"].read_text()


def test_a_dangling_link_at_dest_is_not_followed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: a dangling link counted as "does not exist" and the copy created its target, without --force."""
    (tmp_path / "mine.yaml").symlink_to(tmp_path / "elsewhere.yaml")
    monkeypatch.chdir(tmp_path)
    result = cli("profiles", "copy", "h100-ngram", "mine.yaml")
    assert result.code == 2 and "exists" in result.err, result.err
    assert not (tmp_path / "elsewhere.yaml").exists()
