"""The README's CLI tour and CI example run as written, as far as they run without a GPU (issue 16, item 9).

Each command is taken from the README itself and run through a shell (globs expand as in CI) with a
`specdeploy` on PATH that runs this checkout. What needs a GPU, the network or a running server is listed in
NEEDS_MORE, so a new README line either runs here or is named there.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
NEEDS_MORE = {  # first words of a command -> why it does not run on a CPU-only test machine
    "specdeploy build h200-eagle3 --out": "fetches Llama-3.1-8B (network) and needs TensorRT-LLM",
    "specdeploy check-repo artifacts/h200-eagle3/triton": "checks what that build rendered",
    "specdeploy verify artifacts/h200-eagle3": "verifies that build",
    "specdeploy serve": "a long-running tritonserver (tests/triton covers serve and ask)",
    "specdeploy ask": "needs the server above",
    "specdeploy generate": "loads SmolLM2 (tests/slow covers it)",
    "specdeploy tune h200-eagle3 --ray-address": "joins a running Ray cluster (tests/unit/tune/test_ray.py covers it)",
    "specdeploy build profiles/h200/h200-eagle3.yaml": "fetches Llama-3.1-8B (network) and needs TensorRT-LLM",
}
EXIT_1_WITHOUT_GPU = ("specdeploy doctor",)


def _block_after(heading: str, fence: str) -> str:
    start = README.index(heading)
    body = README.index(f"```{fence}\n", start) + len(fence) + 4
    return README[body:README.index("```", body)]


def tour() -> list[str]:
    lines = [line.split("  #")[0].strip() for line in _block_after("## A tour of the CLI", "bash").splitlines()]
    return [line for line in lines if line.startswith("specdeploy ")]


def ci() -> list[str]:
    """The GPU runner's job (the CPU job runs whole in test_ci_recipe.py)."""
    job = yaml.safe_load(_block_after("## CI example", "yaml"))["jobs"]["gpu-build"]
    runs = [step["run"] for step in job["steps"] if "run" in step]
    return [r.split("  #")[0].strip() for r in runs if r.startswith("specdeploy ")]


def _shell(command: str, cwd: Path, bin_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _bin(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "specdeploy"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m specdeploy "$@"\n')
    shim.chmod(0o755)
    return bin_dir


def _run_all(commands: list[str], cwd: Path, bin_dir: Path) -> list[str]:
    ran = []
    for command in commands:
        if any(command.startswith(prefix) for prefix in NEEDS_MORE):
            continue
        result = _shell(command, cwd, bin_dir)
        allowed = (0, 1) if command.startswith(EXIT_1_WITHOUT_GPU) else (0,)
        assert result.returncode in allowed, f"README: `{command}` exited {result.returncode}:\n{result.stderr}"
        ran.append(command)
    return ran


def test_the_readme_tour_runs_as_written(tmp_path: Path) -> None:
    commands = tour()
    assert len(commands) >= 15
    ran = _run_all(commands, tmp_path, _bin(tmp_path))
    assert (tmp_path / "h200-eagle3.yaml").is_file()  # `profiles copy h200-eagle3 .`
    assert not (tmp_path / "artifacts" / "h200-eagle3" / "triton").exists()  # `render --pretend` writes nothing
    assert len(ran) == len(commands) - sum(any(c.startswith(p) for p in NEEDS_MORE) for c in commands)


def test_the_readme_ci_example_runs_as_written(tmp_path: Path) -> None:
    commands = ci()
    assert commands[0] == "specdeploy validate profiles/*/*.yaml"
    ran = _run_all(commands, ROOT, _bin(tmp_path))  # from the checkout's root, as CI runs it
    assert "specdeploy validate profiles/*/*.yaml" in ran
    for command in commands:  # what cannot run here at least names files that exist
        for word in command.split():
            if word.startswith("profiles/") and "*" not in word:
                assert (ROOT / word).is_file(), f"README CI example: {word} does not exist"
