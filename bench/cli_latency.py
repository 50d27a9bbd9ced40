"""Cold wall-clock of `specdeploy --help`, `validate` and `plan` on a shipped profile (target <= 0.3 s)."""

from __future__ import annotations

import subprocess
import sys
import time

from _common import summary, write_result

TARGET_S = 0.3
COMMANDS = {"help": ["--help"], "validate": ["validate", "h200-eagle3"], "plan": ["plan", "h200-eagle3"]}


def measure(args: list[str], repeats: int) -> list[float]:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "specdeploy", *args], check=True, capture_output=True)
        samples.append(time.perf_counter() - start)
    return samples


def main() -> None:
    results = {name: summary(measure(args, 7)) for name, args in COMMANDS.items()}
    for name, stats in results.items():
        stats["meets_target"] = stats["median_s"] <= TARGET_S
        print(f"{name:<9} median {stats['median_s'] * 1000:6.0f} ms  (target {TARGET_S * 1000:.0f} ms)")
    write_result("cli_latency", {"target_s": TARGET_S, "commands": results})


if __name__ == "__main__":
    main()
