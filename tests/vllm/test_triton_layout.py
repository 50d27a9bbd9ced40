"""The `vllm` Triton layout's model.json, judged by the real vLLM 0.32 the way Triton's vLLM backend uses it:
`AsyncEngineArgs(**model.json)` and the engine config it builds (triton-inference-server/vllm_backend src/model.py
@ r24.10). Loading it in the bundled tritonserver 2.51 does not work here (docs/engines/vllm.md, "Through Triton"):
this tier checks what can be checked without it."""

from __future__ import annotations

import json
from pathlib import Path

from specdeploy.api import load_and_resolve
from specdeploy.engines.vllm import env
from specdeploy.engines.vllm.selfcheck import check_files
from specdeploy.render.actions import render_resolved
from tests.helpers import needs_triton_schema

ROOT = Path(__file__).resolve().parents[2]
EAGLE3 = ROOT / "profiles" / "h100" / "h100-vllm-eagle3.yaml"


@needs_triton_schema
def test_vllm_builds_its_engine_from_the_rendered_model_json(
    vllm_install: env.VllmInstall, models: dict[str, Path], tmp_path: Path
) -> None:
    sets = (
        f"target.model={models['smollm2']}",
        f"speculative.draft_model={models['eagle3_head']}",
        "speculative.draft_len=3",
        "target.dtype=float32",
        "serving.max_seq_len=2048",
        "triton.model_name=vllm_model",
    )
    render_resolved(load_and_resolve(str(EAGLE3), sets), tmp_path / "triton")
    good = tmp_path / "triton" / "vllm_model" / "1" / "model.json"
    broken = tmp_path / "broken.json"  # a key AsyncEngineArgs has no field for: the backend's load would raise
    broken.write_text(json.dumps({**json.loads(good.read_text()), "max_num_seq": 8}))
    batch = check_files([good, broken])
    assert batch.version == vllm_install.version
    accepted, refused = batch.results
    assert accepted.ok, accepted.error
    assert accepted.speculative is not None and accepted.speculative["method"] == "eagle3"
    assert accepted.speculative["num_speculative_tokens"] == 3
    assert not refused.ok and refused.stage == "arguments" and "max_num_seq" in str(refused.error)
