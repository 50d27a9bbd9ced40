"""docs/ci.md's GitHub Actions job, run step by step as a CPU runner would (pip install aside)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def _job() -> dict:  # type: ignore[type-arg]
    guide = (ROOT / "docs" / "ci.md").read_text()
    section = guide[guide.index("## A GitHub Actions example") :]
    block = re.search(r"```yaml\n(.*?)```", section, re.DOTALL)
    assert block is not None
    return yaml.safe_load(block.group(1))["jobs"]["deploy-artifacts"]  # type: ignore[no-any-return]


def test_the_readme_ci_job_validates_tunes_renders_checks_and_uploads(tmp_path: Path) -> None:
    job = _job()
    shutil.copytree(ROOT / "profiles", tmp_path / "profiles")
    env = {**os.environ, "NO_COLOR": "1", "HF_HUB_OFFLINE": "1"}
    runs = [step["run"] for step in job["steps"] if "run" in step]
    assert runs[0].startswith("pip install") and "[deploy,triton]" in runs[0]  # render checks need Triton's schema
    for line in runs[1:]:
        argv = shlex.split(line)
        assert argv[0] == "specdeploy", line
        done = subprocess.run(
            [sys.executable, "-m", "specdeploy", *argv[1:]],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"
    [upload] = [step for step in job["steps"] if step.get("uses", "").startswith("actions/upload-artifact")]
    folder = tmp_path / upload["with"]["path"]
    rendered = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    for expected in (
        "deploy/container/Dockerfile",
        "deploy/k8s/leaderworkerset.yaml",
        "deploy/slurm/sbatch.sh",
        "triton/tensorrt_llm/1/model.yaml",
        "tune/result.json",
        "specdeploy.lock",
        "llm_api_options.yaml",
    ):
        assert expected in rendered, rendered
    # a CPU runner measures nothing: the schedule the artifact serves is the model's prediction, and says so
    assert json.loads((folder / "specdeploy.lock").read_text())["tuned"]["evidence"] == "predicted"
    assert "PREDICTED" in (folder / "llm_api_options.yaml").read_text()
