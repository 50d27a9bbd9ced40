"""The wheel ships templates/, profiles/ and plugins/, and the installed command works outside the checkout."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (found,) = out.glob("specdeploy-*.whl")
    return found


def test_wheel_contains_data_and_plugins(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for profile in ROOT.glob("profiles/**/*.yaml"):
        assert f"specdeploy/_data/profiles/{profile.relative_to(ROOT / 'profiles').as_posix()}" in names
    for template in ROOT.glob("templates/**/*.j2"):
        assert f"specdeploy/_data/templates/{template.relative_to(ROOT / 'templates').as_posix()}" in names
    assert "specdeploy_mechanisms/eagle3.py" in names
    assert "specdeploy/deploy/schemas/leaderworkerset.v1.json" in names
    assert {f"specdeploy/perfmodel/data/{n}.json" for n in ("published", "engines", "bands")} <= names  # plan reads
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "[specdeploy.mechanisms]" in text and "eagle3 = specdeploy_mechanisms.eagle3:Eagle3" in text
    assert "specdeploy = specdeploy.cli:main" in text


def test_wheel_carries_type_information_and_the_license(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "specdeploy/py.typed" in names  # PEP 561: mypy reads the package's own annotations
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), sorted(n for n in names if "dist-info" in n)


def test_installed_command_runs_outside_the_checkout(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(site), str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site)}
    where = subprocess.run(
        [sys.executable, "-c", "import specdeploy._resources as r; print(r.data_dir('profiles'))"],
        capture_output=True,
        text=True,
        env=env,
        cwd=work,
        check=True,
    )
    assert where.stdout.strip().startswith(str(site))  # the wheel's data, not the checkout's
    script = site / "bin" / "specdeploy"
    assert script.exists()
    for args in (["profiles", "list"], ["validate", "h200-eagle3"], ["plan", "cpu-smollm2"]):
        result = subprocess.run(
            [sys.executable, str(script), *args], capture_output=True, text=True, env=env, cwd=work, timeout=120
        )
        assert result.returncode == 0, result.stderr
