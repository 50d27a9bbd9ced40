"""The demo's wall clock and each phase's share (what `make demo` runs after installing)."""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from _common import write_result

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
from demo import run_demo, show  # noqa: E402

TARGET_S = 600


def main() -> None:
    out = Path(tempfile.mkdtemp(prefix="specdeploy-demo-"))
    try:
        summary = run_demo(out)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    show(summary)
    total = summary["total_s"]
    shares = {name: round(seconds / total, 3) for name, seconds in summary["phases_s"].items()}
    write_result(
        "demo",
        {
            "target_s": TARGET_S,
            "total_s": total,
            "phases_s": summary["phases_s"],
            "phase_share": shares,
            "measured": summary["measured"],
            "mechanism": summary["mechanism"],
            "served": summary["served"],
            "other": summary["other"],
            "schedule": summary["schedule"],
            "max_concurrency": summary["max_concurrency"],
            "note": "excludes `make install`; a cold first run also converts the GGUF (~20 s)",
        },
    )


if __name__ == "__main__":
    main()
