"""What the vLLM self-check costs: importing vLLM's EngineArgs, and checking emitted `vllm serve --config` files.

Writes the `selfcheck` section of bench/results/vllm.json (other sections are other benchmarks'). Needs vLLM's
environment (`make vllm-env`) and the reference runtime's SmolLM2 conversion (built on first use). The machine's
load average is recorded with the figures: on a shared 2-core box it moves them by a factor of five.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import RESULTS, machine, summary

from specdeploy.engines.reference.runtime.models import SMOLLM2_REF, resolve_target_folder
from specdeploy.engines.vllm import env
from specdeploy.engines.vllm.contract import line_for
from specdeploy.engines.vllm.emit import ServeLimits, emit
from specdeploy.engines.vllm.selfcheck import check_emitted, config_folder
from specdeploy.runtime_paths import packaged_model

IMPORTS = 3
BATCHES = 2
IMPORT_CODE = "from vllm.engine.arg_utils import EngineArgs"


def import_times(python: Path) -> list[float]:
    samples = []
    for _ in range(IMPORTS):
        start = time.perf_counter()
        subprocess.run([str(python), "-c", IMPORT_CODE], check=True, capture_output=True, env=env.child_env())
        samples.append(time.perf_counter() - start)
    return samples


def cases(root: Path) -> dict[str, Any]:
    line = line_for(env.require().version)
    target = config_folder(resolve_target_folder(SMOLLM2_REF), root / "smollm2")
    head = config_folder(packaged_model("specdeploy/smollm2-135m-eagle3") or Path(), root / "head")
    drafter = config_folder(packaged_model("specdeploy/smollm2-135m-drafter") or Path(), root / "drafter")
    limits = ServeLimits(max_num_seqs=8, max_model_len=2048)
    common = {"target": str(target), "limits": limits, "line": line}
    return {
        "plain": emit(None, {}, 0, **common),
        "ngram+schedule": emit("ngram", {}, 4, schedule={1: 4, 4: 2}, max_concurrency=6, **common),
        "draft_model": emit("draft_target", {}, 2, drafter=str(drafter), **common),
        "eagle3": emit("eagle3", {}, 3, drafter=str(head), **common),
        "broken: prompt_lookup_min > max": emit(
            "ngram", {"max_matching_ngram_size": 2, "prompt_lookup_min": 5}, 3, **common
        ),
    }


def main() -> None:
    install = env.require()
    load_before = os.getloadavg()[0]
    imports = import_times(install.python)
    with tempfile.TemporaryDirectory() as tmp:
        emitted = cases(Path(tmp))
        batches = [check_emitted(list(emitted.values())) for _ in range(BATCHES)]
    per_config = {name: summary([b.results[i].check_s for b in batches]) for i, name in enumerate(emitted)}
    section = {
        "vllm": f"{install.distribution} {install.version}",
        "load_average_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "engine_args_import": summary(imports),
        "selfcheck_child_import": summary([b.import_s for b in batches]),
        "per_config_check": per_config,
        "batch_wall": summary([b.wall_s for b in batches]),
        "configs_per_batch": len(emitted),
        "verdicts": {name: batches[-1].results[i].error or "accepted" for i, name in enumerate(emitted)},
        "note": "warm figures: the first check of an architecture vLLM never inspected on this machine starts one "
        "more interpreter (its model registry; 60-125 s measured under load), then vLLM caches the result "
        "in ~/.cache/vllm/modelinfos",
    }
    path = RESULTS / "vllm.json"
    doc = json.loads(path.read_text()) if path.is_file() else {"benchmark": "vllm"}
    doc.update({"machine": machine(), "selfcheck": section})
    RESULTS.mkdir(parents=True, exist_ok=True)
    tmp_path = path.with_suffix(".json.tmp")
    tmp_path.write_text(json.dumps(doc, indent=2) + "\n")
    os.replace(tmp_path, path)
    print(
        f"EngineArgs import median {section['engine_args_import']['median_s']:.1f} s; "
        f"{len(emitted)} configs checked in {section['batch_wall']['median_s']:.1f} s (load {load_before:.1f})"
    )


if __name__ == "__main__":
    main()
