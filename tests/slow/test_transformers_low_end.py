"""The lowest supported transformers (specdeploy/engines/reference/runtime/stack.py: TESTED) decodes correctly, for
real.

CI's venv holds the newest release; the runtime also claims the oldest. That release (with a huggingface-hub it
accepts: 5.17 needs hub < 2.0, and hub 1.x needs httpx < 1) is pip-installed once into a folder of its own under
$SPECDEPLOY_CACHE/stacks/ and put first on sys.path of a subprocess that runs the runtime's lossless tests
against transformers' own `generate` (tiny models, and SmolLM2) and the shipped EAGLE head's acceptance. On
5.17 the runtime once decoded without its KV cache, all outputs wrong and the head accepting nothing (issue 18).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from specdeploy.engines.reference.runtime.stack import TESTED

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
LOW = f"{TESTED[0][0]}.{TESTED[0][1]}.0"
PINS = (f"transformers=={LOW}", "huggingface-hub==1.33.0", "httpx==0.28.1", "httpcore==1.0.9")
"""Installed with --no-deps over the venv: everything else transformers 5.17 needs (tokenizers 0.23, safetensors,
regex, numpy...) is the venv's own and within 5.17's ranges."""
TESTS = (
    "tests/unit/runtime/test_greedy_lossless.py",
    "tests/unit/runtime/test_stack.py",
    "tests/unit/runtime/test_kv_rollback.py",
    "tests/unit/runtime/test_static_decode.py",  # the static cache object the model's attention calls
    "tests/unit/runtime/test_graphs_replay.py",  # the decoder layers' outputs replayed to forward hooks
    "tests/unit/runtime/test_reuse_churn.py",  # a donor's slots preloaded into a DynamicCache
    "tests/slow/test_reference_smollm2.py::test_plain_decoding_matches_transformers_generate",
    "tests/slow/test_reference_smollm2.py::test_the_shipped_eagle_head_accepts_clearly",  # and equals plain
)


def low_end_site() -> Path:
    """The pinned packages in a folder of their own, installed once (atomically) and reused by later runs."""
    from specdeploy.runtime_paths import cache_dir

    folder = cache_dir() / "stacks" / "-".join(p.replace("==", "-") for p in PINS)
    if (folder / ".complete").is_file():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=folder.parent))
    try:
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "-q",
                "--no-deps",
                "--disable-pip-version-check",
                "--target",
                str(tmp),
                *PINS,
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert run.returncode == 0, f"pip could not install {PINS}:\n{run.stdout[-2000:]}{run.stderr[-2000:]}"
        (tmp / ".complete").touch()
        tmp.replace(folder)
    except OSError:
        if not (folder / ".complete").is_file():  # another run finished first: use its folder
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder


def test_the_runtime_is_lossless_and_the_eagle_head_accepts_on_the_lowest_transformers():
    site = low_end_site()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), str(ROOT), str(ROOT / "plugins")]),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    env.pop("SPECDEPLOY_ALLOW_UNTESTED_TRANSFORMERS", None)
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import transformers, huggingface_hub; "
            "print(transformers.__version__, huggingface_hub.__version__, transformers.__file__)",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert probe.stdout.split()[:2] == [LOW, "1.33.0"], probe.stdout + probe.stderr
    assert probe.stdout.split()[2].startswith(str(site))
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-o", "addopts=", *TESTS],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert run.returncode == 0, f"on transformers {LOW}:\n{run.stdout[-4000:]}{run.stderr[-2000:]}"
    assert " passed" in run.stdout and "skipped" not in run.stdout.splitlines()[-1]
