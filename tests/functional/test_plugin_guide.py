"""docs/plugins.md's worked example: its files are the package in tests/fixtures/plugin_example, and that package,
installed, validates and plans through the CLI as the guide says."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import pip_install_into

ROOT = Path(__file__).resolve().parents[2]
GUIDE = (ROOT / "docs" / "plugins.md").read_text()
PACKAGE = ROOT / "tests" / "fixtures" / "plugin_example"


def _fenced(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", GUIDE, re.DOTALL)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("plugin-site")
    pip_install_into(target, str(PACKAGE))
    return target


def _shell(script: str, cwd: Path, site: Path) -> subprocess.CompletedProcess[str]:
    bin_dir = cwd / "bin"
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "specdeploy"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m specdeploy "$@"\n')
    shim.chmod(0o755)
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(site), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(
        ["bash", "-c", f"set -euo pipefail\n{script}"], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_the_guide_shows_the_fixture_package_verbatim() -> None:
    assert (PACKAGE / "pyproject.toml").read_text() in _fenced("toml")
    assert (PACKAGE / "specdeploy_lookback" / "__init__.py").read_text() in _fenced("python")


def test_the_guide_commands_install_validate_and_plan(site: Path, tmp_path: Path) -> None:
    block = GUIDE[GUIDE.index("<!-- test: plugin -->") :]
    script = re.search(r"```bash\n(.*?)```", block, re.DOTALL)
    assert script is not None
    lines = script.group(1).splitlines()
    assert lines[0].startswith("pip install ./plugin_example")  # done by the fixture, into a folder of its own
    result = _shell("\n".join(lines[1:]), tmp_path, site)
    assert result.returncode == 0, result.stderr
    assert re.search(r"^lookback\s+pytorch 1\.2/1\.3; vllm 0\.32", result.stdout, re.MULTILINE), result.stdout
    assert "speculative.options.longest" in result.stdout and "mechanism lookback" in result.stdout
    # what each engine's declaration emits: TensorRT-LLM's n-gram decoding, vLLM's n-gram proposer
    assert "decoding_type: NGram" in result.stdout and "max_matching_ngram_size: 4" in result.stdout
    assert '"method": "ngram"' in result.stdout and '"prompt_lookup_min": 2' in result.stdout


def test_the_guide_errors_are_what_validate_prints(site: Path, tmp_path: Path) -> None:
    text = _fenced("text")[0]
    profile = re.search(r"cat > lookback.yaml <<'EOF'\n(.*?)EOF\n", GUIDE, re.DOTALL)
    assert profile is not None
    (tmp_path / "lookback.yaml").write_text(profile.group(1))
    shown = re.findall(r"^\$ (.*)\n((?:(?!\$ ).*\n)+)", text, re.MULTILINE)
    assert len(shown) == 3
    for command, expected in shown:
        result = _shell(command, tmp_path, site)
        assert result.returncode == 2, result.stderr
        for line in expected.splitlines():
            assert line in result.stderr, (line, result.stderr)
