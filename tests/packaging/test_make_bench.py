"""`make bench` runs every benchmark script in bench/ (a script with a `__main__` block), so none goes stale unseen."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_make_bench_runs_every_bench_script() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    target = re.search(r"^bench:.*\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert target, "no bench target in the Makefile"
    run = set(re.findall(r"bench/([\w.]+\.(?:py|sh))", target.group(1)))
    scripts = {p.name for p in (ROOT / "bench").glob("*.py") if 'if __name__ == "__main__"' in p.read_text()}
    assert scripts - run == set(), f"bench scripts `make bench` does not run: {sorted(scripts - run)}"
    assert run - {p.name for p in (ROOT / "bench").iterdir()} == set()
