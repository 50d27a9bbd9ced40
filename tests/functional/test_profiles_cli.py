"""`specdeploy profiles`: copying a shipped profile where the user says, a misspelt name suggested, and profile
names completed in the shell. In process through `main` (the completion in a subprocess: it reads its env)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from specdeploy.profile.shipped import shipped_profiles
from tests.helpers import cli


def test_profiles_copy_into_a_new_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = cli("profiles", "copy", "h100-ngram", "mine/")
    assert result.code == 0, result.err
    assert (tmp_path / "mine" / "h100-ngram.yaml").read_text() == shipped_profiles()["h100-ngram"].read_text()
    assert cli("profiles", "copy", "h100-ngram", "other.yaml").code == 0
    assert (tmp_path / "other.yaml").is_file()


@pytest.mark.parametrize("dest", ["afile/sub/", "afile/x", "d" * 5000])
def test_profiles_copy_where_no_folder_can_be_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dest: str
) -> None:
    """Creating DEST's folder fails (a file in the way), or DEST is a name the OS refuses: exit 2 with the reason
    and the fix, not an internal error."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("x")
    code, _, err = cli("profiles", "copy", "h100-ngram", dest)
    assert code == 2 and "cannot write" in err and "internal error" not in err, err
    if not dest.startswith("d"):
        assert "hint: DEST must be a folder (or a .yaml file) in a writable place" in err, err


@pytest.mark.parametrize("command", [("profiles", "show", "h200-eagl"), ("profiles", "copy", "h200-eagl")])
def test_a_misspelt_shipped_name_is_suggested(tmp_path: Path, command: tuple[str, ...]) -> None:
    code, _, err = cli(*command, str(tmp_path)) if command[1] == "copy" else cli(*command)
    assert code == 2 and "hint: did you mean 'h200-eagle3'? (`specdeploy profiles list`)" in err, err


def test_profile_arguments_complete_in_the_shell(tmp_path: Path) -> None:
    def complete(words: str) -> list[str]:
        env = {
            **os.environ,
            "_SPECDEPLOY_COMPLETE": "bash_complete",
            "COMP_WORDS": words,
            "COMP_CWORD": str(len(words.split()) - 1),
        }
        code = "from specdeploy.cli import main; main()"
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.splitlines()

    assert complete("specdeploy plan h200") == [
        "plain,h200-eagle3",
        "plain,h200-mtp-deepseek-v3-2node",
        "plain,h200-mtp-deepseek-v3",
        "file,h200",
    ]
    assert complete("specdeploy profiles show h10") == [
        "plain,h100-draft-target",
        "plain,h100-ngram",
        "plain,h100-vllm-eagle3",
        "plain,h100-vllm-mtp-qwen3-next",
    ]
