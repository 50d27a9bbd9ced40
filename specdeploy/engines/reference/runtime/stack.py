"""The transformers releases the runtime is tested on, and how it hands a model its KV cache on each.

transformers 5.24.0 renamed the forward keyword that carries the cache (`past_key_values` → `cache`), keeping the
old name as a deprecated alias (`deprecate_kwarg("past_key_values", "5.40.0", new_name="cache")` in its
models/llama/modeling_llama.py; 5.23.0's still declares `past_key_values`). An unknown keyword is swallowed by
`**kwargs`: on 5.17 (as on every release before 5.24) a model handed `cache=` decoded without its cache, every
output wrong and no error (issue 18, on an H200). So the keyword is read from the model's own forward signature,
the cache is checked to have grown after every forward (cache.py), and a release outside the tested range is
refused before anything decodes.
"""

from __future__ import annotations

import inspect
import os
import re
import sys
from typing import Any

from specdeploy.errors import MissingDependency

TESTED = ((5, 17), (5, 24))
"""Lowest and highest tested transformers (major, minor), both ends inclusive: 5.24 is CI's venv, 5.17 the GPU
machine's stack, tested by tests/slow/test_transformers_low_end.py in a folder of its own. Keep pyproject's
`reference` extra in step (a unit test compares them)."""
OPT_OUT = "SPECDEPLOY_ALLOW_UNTESTED_TRANSFORMERS"


def parse(version: str) -> tuple[int, int]:
    """(major, minor) of a version string such as `5.17.0`, `5.25.0.dev0` or `5.3.0rc1`."""
    match = re.match(r"(\d+)\.(\d+)", version)
    if not match:
        raise MissingDependency(f"cannot read the transformers version {version!r}")
    return int(match[1]), int(match[2])


def supported_range() -> str:
    (lo_major, lo_minor), (hi_major, hi_minor) = TESTED
    return f">={lo_major}.{lo_minor},<{hi_major}.{hi_minor + 1}"


def check_transformers(version: str | None = None) -> None:
    """Refuse a transformers outside TESTED (MissingDependency, exit 1); with OPT_OUT=1, warn loudly instead."""
    if version is None:
        import transformers

        version = str(transformers.__version__)
    if TESTED[0] <= parse(version) <= TESTED[1]:
        return
    message = (
        f"transformers {version} is outside the range the reference runtime is tested on "
        f"({supported_range()}); on an untested release it may decode wrongly without any error"
    )
    if os.environ.get(OPT_OUT) == "1":
        print(f"WARNING: {message} ({OPT_OUT}=1 set: going on anyway)", file=sys.stderr, flush=True)
        return
    raise MissingDependency(message, hint=f"pip install 'transformers{supported_range()}' (or set {OPT_OUT}=1 to try)")


def cache_keyword(model: Any) -> str:
    """The forward keyword that carries the KV cache on this model's transformers: `cache` or `past_key_values`."""
    params = inspect.signature(type(model).forward).parameters
    for name in ("cache", "past_key_values"):
        if name in params:
            return name
    raise MissingDependency(
        f"{type(model).__name__}.forward takes no KV cache (neither `cache` nor `past_key_values`)",
        hint=f"use transformers{supported_range()}",
    )
