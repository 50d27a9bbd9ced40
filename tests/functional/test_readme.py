"""The README's and the guides' CPU commands run as written; the CI example's GPU job runs as far as a CPU allows.

A fenced `bash` block right after a `<!-- test: cpu -->` line, in README.md or any docs/**/*.md, is run whole by
bash (`set -euo pipefail`) with a `specdeploy` on PATH that runs this checkout, one empty folder per document, its
blocks in order (a later block may use what an earlier one wrote). Commands that need a GPU, the network, a
built artifact or a running server go in unmarked blocks.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
MARK = "<!-- test: cpu -->"
BLOCK = re.compile(re.escape(MARK) + r"\n```bash\n(.*?)```", re.DOTALL)
CI_GUIDE = ROOT / "docs" / "ci.md"


def marked_blocks(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    blocks = BLOCK.findall(text)
    assert len(blocks) == text.count(MARK), f"{path}: a {MARK} line not followed by a ```bash block"
    return blocks


DOCUMENTS = [p for p in (ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))) if MARK in p.read_text()]


def _bin(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "specdeploy"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m specdeploy "$@"\n')
    shim.chmod(0o755)
    return bin_dir


def _shell(script: str, cwd: Path, bin_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "NO_COLOR": "1",
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    return subprocess.run(
        ["bash", "-c", f"set -euo pipefail\n{script}"], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def test_the_readme_and_the_guides_mark_commands_to_run() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in DOCUMENTS}
    assert {"README.md", "docs/cli.md", "docs/profiles.md", "docs/mechanisms.md", "docs/deploy.md"} <= names, names


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_the_marked_commands_run_as_written(document: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    bin_dir = _bin(tmp_path)
    for block in marked_blocks(document):
        result = _shell(block, work, bin_dir)
        assert result.returncode == 0, f"{document.name}: exited {result.returncode}:\n{block}\n{result.stderr}"


def test_the_tour_copies_a_profile_and_pretends_without_writing(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    [tour] = [b for b in marked_blocks(ROOT / "docs" / "cli.md") if "render h200-eagle3 --pretend" in b]
    assert len([line for line in tour.splitlines() if line.startswith("specdeploy ")]) >= 10
    assert _shell(tour, work, _bin(tmp_path)).returncode == 0
    assert (work / "h200-eagle3.yaml").is_file()  # `profiles copy h200-eagle3 .`
    assert not (work / "artifacts" / "h200-eagle3" / "triton").exists()  # `render --pretend` writes nothing


def test_the_readme_shows_the_demo_and_the_test_suite() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "make demo" in readme and "make test" in readme
    assert len(readme.splitlines()) <= 200


def _ci_block() -> str:
    text = CI_GUIDE.read_text()
    section = text[text.index("## A GitHub Actions example") :]
    block = re.search(r"```yaml\n(.*?)```", section, re.DOTALL)
    assert block is not None
    return block.group(1)


def test_the_ci_example_gpu_job_runs_as_far_as_a_cpu_allows(tmp_path: Path) -> None:
    """The GPU runner's job (the CPU job runs whole in test_ci_recipe.py): validate every shipped profile; doctor
    may say no GPU (exit 1); what needs a GPU at least names files that exist."""
    job = yaml.safe_load(_ci_block())["jobs"]["gpu-build"]
    runs = [step["run"].split("  #")[0].strip() for step in job["steps"] if "run" in step]
    commands = [r for r in runs if r.startswith("specdeploy ")]
    assert commands[0] == "specdeploy validate profiles/*/*.yaml"
    bin_dir = _bin(tmp_path)
    for command in commands:
        if command.startswith(("specdeploy validate", "specdeploy doctor")):  # from the checkout's root, as CI
            allowed = (0, 1) if command.startswith("specdeploy doctor") else (0,)
            result = _shell(command, ROOT, bin_dir)
            assert result.returncode in allowed, f"docs/ci.md: `{command}` exited {result.returncode}:\n{result.stderr}"
        for word in command.split():
            if word.startswith("profiles/") and "*" not in word:
                assert (ROOT / word).is_file(), f"docs/ci.md: {word} does not exist"
