"""Hostile profile files: alias bombs, special files, huge files, floods of errors, non-profile files named by
`extends`, unsafe file names. Each is refused quickly with a located error (exit 2), never a hang, a crash or
another file's content."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from specdeploy.profile.yamlmarks import MAX_BYTES
from tests.helpers import billion_laughs, cli

BASE = "target: {model: meta-llama/Llama-3.1-8B-Instruct}\nhardware: {gpu: h200}\n"


def test_alias_bomb_is_refused_at_once_with_its_location(tmp_path: Path) -> None:
    file = tmp_path / "bomb.yaml"
    file.write_text(billion_laughs())
    t0 = time.monotonic()
    code, _, err = cli("validate", str(file))
    assert code == 2 and time.monotonic() - t0 < 5
    assert f"{file}:2:" in err and "aliases (*name, <<: *name) are not allowed in a profile" in err


@pytest.mark.parametrize("where", ["options", "extends"])
def test_aliases_are_refused_through_options_and_extends(tmp_path: Path, where: str) -> None:
    bomb = "speculative:\n  mechanism: eagle3\n  options: &o {x: 1}\n  draft_model: *o\n"
    if where == "extends":
        (tmp_path / "parent.yaml").write_text(BASE + bomb)
        (tmp_path / "child.yaml").write_text("extends: parent.yaml\n")
        file = tmp_path / "child.yaml"
    else:
        file = tmp_path / "child.yaml"
        file.write_text(BASE + bomb)
    code, _, err = cli("validate", str(file))
    assert code == 2 and "aliases (*name, <<: *name) are not allowed" in err
    assert f"{'parent' if where == 'extends' else 'child'}.yaml:6:" in err


def _validate_subprocess(*args: str) -> subprocess.CompletedProcess[str]:
    """A subprocess, not `cli`: a loader that reads a special file forever is stopped by the timeout."""
    return subprocess.run(
        [sys.executable, "-m", "specdeploy", "validate", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "NO_COLOR": "1"},
    )


def test_special_files_are_never_read(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    (tmp_path / "child.yaml").write_text(BASE + "extends: fifo.yaml\n")
    for source in ("/dev/zero", str(fifo), str(tmp_path / "child.yaml")):
        result = _validate_subprocess(source)  # the old loader read these forever
        assert result.returncode == 2 and "not a regular file" in result.stderr, result.stderr


def test_a_huge_profile_is_refused_unread(tmp_path: Path) -> None:
    file = tmp_path / "huge.yaml"
    file.write_text(BASE + "#" * MAX_BYTES)
    code, _, err = cli("validate", str(file))
    assert code == 2 and "larger than a profile can be" in err


def test_a_flood_of_errors_is_capped(tmp_path: Path) -> None:
    file = tmp_path / "flood.yaml"
    file.write_text(BASE + "serving:\n" + "".join(f"  unknown_{i}: 1\n" for i in range(3000)))
    code, _, err = cli("validate", str(file))
    assert code == 2 and "... and 2900 more errors not shown (only the first 100 are reported)" in err
    assert err.count("unknown key") == 100


def test_a_symlink_loop_is_a_located_error(tmp_path: Path) -> None:
    loop = tmp_path / "loop.yaml"
    loop.symlink_to(loop)
    code, _, err = cli("validate", str(loop))
    assert code == 2 and "Traceback" not in err and str(loop) in err


@pytest.mark.parametrize("secret_name", ["shadow", "shadow.yaml"])
def test_extends_never_shows_another_files_content(tmp_path: Path, secret_name: str) -> None:
    secret = tmp_path / "etc" / secret_name
    secret.parent.mkdir()
    secret.write_text("root:$6$SECRETHASH:19000:0:99999:7:::\nbin:*:19000:0:99999:7:::\n")
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "p.yaml").write_text(BASE + f"extends: {secret}\n")
    code, _, err = cli("validate", str(tmp_path / "proj" / "p.yaml"))
    assert code == 2 and "SECRETHASH" not in err and "bin:*" not in err, err


def test_an_unsafe_profile_name_is_invalid(tmp_path: Path) -> None:
    """`Path('...yaml').stem` is '..': a build wrote into --out's parent."""
    file = tmp_path / "...yaml"
    file.write_text(BASE + "speculative: {mechanism: ngram, draft_len: 3}\n")
    code, _, err = cli("validate", str(file))
    assert code == 2 and "not a safe artifact folder name" in err
    out = tmp_path / "d" / "out"
    code, _, err = cli("build", str(file), "--out", str(out))
    assert code == 2 and not (tmp_path / "d").exists()
