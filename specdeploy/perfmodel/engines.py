"""Engine efficiency profiles: named `Efficiency` parameter sets fitted by bench/perfmodel_published.py.

`trtllm`, `sglang` and `vllm` are fitted on the calibration half of the published record (CUDA graphs: small fixed
costs); `torch-eager` on the H200 step-cost grid (eager PyTorch: ~0.3 ms per layer of launches). The fitted values
live in data/engines.json with the rows and the error each fit reached; a missing file or engine falls back to the
uncalibrated `Efficiency()` defaults.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from specdeploy.perfmodel.cost import Efficiency
from specdeploy.perfmodel.record import DATA

ENGINES_FILE = DATA / "engines.json"


@cache
def profiles() -> dict[str, dict[str, Any]]:
    """Every fitted profile: {"efficiency": {...}, "fitted_on": [...], "rel_err": {...}}."""
    if not ENGINES_FILE.exists():
        return {}
    return dict(json.loads(ENGINES_FILE.read_text(encoding="utf-8"))["engines"])


def engine_efficiency(name: str) -> Efficiency:
    """The fitted profile `name` (an engine's `Engine.efficiency`); `Efficiency()` when none was fitted."""
    entry = profiles().get(name)
    return Efficiency.from_dict(entry["efficiency"]) if entry else Efficiency()
