"""Cold wall-clock of `specdeploy --help`, `validate` and `plan` on a shipped profile (target <= 0.3 s).

Two floors are measured alongside, so a result can be read on any machine: the bare interpreter, and
pydantic's import plus one model class (what the fast path keeps off `validate` and `plan`: an invalid
profile, or a plugin without a generated options table, still pays it). The runs are interleaved (one of
each per round) so that load from other jobs on the machine skews them all alike.
"""

from __future__ import annotations

import subprocess
import sys
import time

from _common import summary, write_result

TARGET_S = 0.3
REPEATS = 9
COMMANDS = {"help": ["--help"], "validate": ["validate", "h200-eagle3"], "plan": ["plan", "h200-eagle3"]}
FLOORS = {"interpreter": "pass",
          "pydantic_model": "from pydantic import BaseModel\nclass Options(BaseModel):\n    window: int = 2\n"}


def measure(runs: dict[str, list[str]], repeats: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, argv in runs.items():
            start = time.perf_counter()
            subprocess.run([sys.executable, *argv], check=True, capture_output=True)
            samples[name].append(time.perf_counter() - start)
    return samples


def main() -> None:
    runs = {**{name: ["-m", "specdeploy", *args] for name, args in COMMANDS.items()},
            **{name: ["-c", code] for name, code in FLOORS.items()}}
    samples = measure(runs, REPEATS)
    results = {name: summary(samples[name]) for name in COMMANDS}
    floors = {name: summary(samples[name]) for name in FLOORS}
    for name, stats in results.items():
        stats["meets_target"] = stats["median_s"] <= TARGET_S
        print(f"{name:<9} median {stats['median_s'] * 1000:6.0f} ms  (target {TARGET_S * 1000:.0f} ms)")
    for name, stats in floors.items():
        print(f"floor: {name:<15} median {stats['median_s'] * 1000:6.0f} ms")
    write_result("cli_latency", {"target_s": TARGET_S, "commands": results, "floors": floors})


if __name__ == "__main__":
    main()
