"""Cold start of `specdeploy --help`, `validate` and `plan` on a shipped profile (target <= 0.3 s): this checkout
("after") and an earlier commit ("before", `--before REF`, exported with `git archive`).

Two floors are measured alongside, so a result can be read on any machine: the bare interpreter, and pydantic's
import plus one model class. Each figure is the median of 9 cold processes, wall clock and CPU time (user + system:
what a busy machine does not inflate); the runs are interleaved (one of each per round) so that load from other
jobs skews them all alike, and the 1-minute load average is recorded at the start and the end. `earlier_runs` in
the result file is carried over as it was recorded (figures from trees this checkout no longer has).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from _common import RESULTS, summary, write_result

TARGET_S = 0.3
REPEATS = 9
BEFORE = "82e8c33"
"""The last tree with the pydantic-free fast path (issue 26 item 4 retired it: the models decide every profile)."""
ROOT = Path(__file__).resolve().parent.parent
COMMANDS = {"help": ["--help"], "validate": ["validate", "h200-eagle3"], "plan": ["plan", "h200-eagle3"]}
FLOORS = {
    "interpreter": "pass",
    "pydantic_model": "from pydantic import BaseModel\nclass Options(BaseModel):\n    window: int = 2\n",
}
Run = tuple[str, str]
"""(tree, variant or floor; command)."""


def export(ref: str, into: Path) -> Path:
    """The package, its built-in plugins and data at `ref`, byte-compiled as `make install` leaves a checkout."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", ref, "specdeploy", "plugins", "profiles", "templates"],
        check=True,
        capture_output=True,
    ).stdout
    with tempfile.TemporaryFile() as tar_file:
        tar_file.write(archive)
        tar_file.seek(0)
        with tarfile.open(fileobj=tar_file) as tar:
            tar.extractall(into, filter="data")
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(into / "specdeploy"), str(into / "plugins")], check=True
    )
    return into


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(
    runs: dict[Run, tuple[list[str], dict[str, str]]], repeats: int, cwd: Path
) -> dict[Run, tuple[list[float], list[float]]]:
    """Per run: (wall seconds, CPU seconds) of each of `repeats` cold processes, started in `cwd`: not this
    checkout, whose `specdeploy` would come before the earlier tree's on `python -m`'s path."""
    samples: dict[Run, tuple[list[float], list[float]]] = {name: ([], []) for name in runs}
    for _ in range(repeats):
        for name, (argv, env) in runs.items():
            start, cpu = time.perf_counter(), _cpu()
            subprocess.run([sys.executable, *argv], check=True, capture_output=True, env=env, cwd=cwd)
            samples[name][0].append(time.perf_counter() - start)
            samples[name][1].append(_cpu() - cpu)
    return samples


def _stats(wall: list[float], cpu: list[float]) -> dict[str, float | int | bool]:
    stats: dict[str, float | int | bool] = {**summary(wall), "cpu_median_s": round(statistics.median(cpu), 4)}
    stats["meets_target"] = stats["median_s"] <= TARGET_S
    return stats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--before", default=BEFORE, help="the commit to compare with (default: %(default)s)")
    args = parser.parse_args()
    load = os.getloadavg()[0]  # other jobs on the machine: wall times above CPU times say how much they took
    with tempfile.TemporaryDirectory() as tmp:
        old = export(args.before, Path(tmp) / "before")
        env = dict(os.environ)
        trees = {"after": env, "before": {**env, "PYTHONPATH": os.pathsep.join([str(old), str(old / "plugins")])}}
        runs: dict[Run, tuple[list[str], dict[str, str]]] = {
            (tree, name): (["-m", "specdeploy", *argv], tree_env)
            for tree, tree_env in trees.items()
            for name, argv in COMMANDS.items()
        }
        runs.update({("floor", name): (["-c", code], env) for name, code in FLOORS.items()})
        (Path(tmp) / "cwd").mkdir()
        samples = measure(runs, REPEATS, Path(tmp) / "cwd")
    results: dict[str, dict[str, dict[str, float | int | bool]]] = {}
    for (variant, name), (wall, cpu) in samples.items():
        results.setdefault(variant, {})[name] = _stats(wall, cpu)
    for variant in ("before", "after"):
        for name, stats in results[variant].items():
            print(
                f"{variant:<8} {name:<9} median {float(stats['median_s']) * 1000:6.0f} ms  "
                f"(cpu {float(stats['cpu_median_s']) * 1000:4.0f} ms; target {TARGET_S * 1000:.0f} ms)"
            )
    for name, stats in results["floor"].items():
        print(f"floor: {name:<15} median {float(stats['median_s']) * 1000:6.0f} ms")
    previous = RESULTS / "cli_latency.json"
    earlier = json.loads(previous.read_text()).get("earlier_runs", []) if previous.exists() else []
    write_result(
        "cli_latency",
        {
            "target_s": TARGET_S,
            "load_average_1min": round(load, 2),
            "load_average_1min_end": round(os.getloadavg()[0], 2),
            "before_ref": args.before,
            "commands": results["after"],
            "before": results["before"],
            "floors": results["floor"],
            "earlier_runs": earlier,
        },
    )


if __name__ == "__main__":
    main()
