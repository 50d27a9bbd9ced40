"""The import contract (pyproject [tool.importlinter]) holds: the layers keep the pipeline's order, the core
reaches engines and mechanisms only through the registry, no packages import each other and the value types sit at
the bottom; no import is excused from it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import pyproject

ROOT = Path(__file__).resolve().parents[3]


def test_the_import_contract_is_kept() -> None:
    tool = Path(sys.executable).with_name("lint-imports")
    if not tool.exists() and shutil.which("lint-imports") is None:
        pytest.skip("import-linter is not installed (the dev extra installs it on Python 3.11 and later)")
    ran = subprocess.run(
        [str(tool) if tool.exists() else "lint-imports", "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stdout[-3000:]
    assert "0 broken" in ran.stdout


def test_no_import_is_excused() -> None:
    """An upward import is moved down, not listed in `ignore_imports`."""
    settings = pyproject()["tool"]["importlinter"]
    excused = {c["name"]: c["ignore_imports"] for c in settings["contracts"] if c.get("ignore_imports")}
    assert not excused
