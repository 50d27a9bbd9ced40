"""Golden repositories for each layout x mechanism; `pytest --update-golden` rewrites them."""

from __future__ import annotations

from pathlib import Path

import pytest

from specdeploy.api import load_and_resolve
from specdeploy.render.actions import llm_args_for
from specdeploy.render.check import check_repo
from specdeploy.render.context import build_context, layout_of
from specdeploy.render.model import RenderInputs
from specdeploy.render.writer import _write_tree, render_files
from tests.helpers import match_golden_tree, needs_triton_schema

pytestmark = needs_triton_schema

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "triton"
INPUTS = RenderInputs(
    engine_dir="/engines/target",
    draft_engine_dir="/engines/draft",
    site_packages="/opt/specdeploy/.venv/lib/python3.11/site-packages",
)
ENGINE = """
target: {model: meta-llama/Llama-3.1-8B-Instruct}
hardware: {gpu: h100-sxm, count: 2, tensor_parallel: 2}
runtime: {backend: tensorrt, trtllm_version: 1.2.1}
serving: {max_batch_size: 8, max_seq_len: 4096}
"""
INLINE = {
    "engine-eagle": ENGINE + "speculative: {mechanism: eagle, draft_model: yuhuili/EAGLE-LLaMA3-Instruct-8B, "
    "draft_len: 4, options: {choices: [[0], [0, 0], [1], [0, 1]]}}\n",
    "engine-lookahead": ENGINE + "speculative: {mechanism: lookahead, options: {window_size: 4, ngram_size: 3, "
    "verification_set_size: 4}}\n",
    "engine-draft_target": ENGINE + "speculative: {mechanism: draft_target, draft_len: 4, "
    "draft_model: meta-llama/Llama-3.2-1B-Instruct}\n",
    "engine-none": ENGINE + "triton: {instances: 1}\n",
    "reference-draft_target": "extends: cpu-smollm2\nspeculative: {mechanism: draft_target, draft_len: 3, "
    "draft_model: specdeploy/smollm2-135m-drafter}\n",
    "reference-eagle3-unary": "extends: cpu-smollm2\nserving: {streaming: false}\n",  # not decoupled
    "llmapi-eagle3-streaming": ENGINE.replace("tensorrt", "pytorch").replace("max_seq_len: 4096", "streaming: true")
    + "speculative: {mechanism: eagle3, draft_len: 3, draft_model: yuhuili/EAGLE3-LLaMA3.1-Instruct-8B}\n",
    # Triton's vLLM backend: a pinned revision, a schedule turned off above its concurrency
    "vllm-ngram-schedule": ENGINE.replace(
        "runtime: {backend: tensorrt, trtllm_version: 1.2.1}", "runtime: {backend: vllm, vllm_version: 0.32.0}"
    ).replace(
        "{model: meta-llama/Llama-3.1-8B-Instruct}",
        "{model: meta-llama/Llama-3.1-8B-Instruct, revision: 0e9e39f249a16976918f6564b8830bc894c89659}",
    )
    + "speculative: {mechanism: ngram, draft_len: 3, schedule: {1: 3, 4: 1}, max_concurrency: 6, "
    "options: {max_matching_ngram_size: 4}}\ntriton: {model_name: vllm_model}\n",
}
SHIPPED = {
    "llmapi-eagle3": "h200-eagle3",
    "llmapi-draft_target": "h100-draft-target",
    "engine-medusa": "l40s-medusa-engine",
    "reference-eagle3": "cpu-smollm2",
    "vllm-eagle3": "h100-vllm-eagle3",
    "vllm-mtp": "h100-vllm-mtp-qwen3-next",
}


def _resolve(case: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    if case in SHIPPED:
        return load_and_resolve(SHIPPED[case])
    path = tmp_path / f"{case}.yaml"
    path.write_text(INLINE[case])
    return load_and_resolve(str(path))


@pytest.mark.parametrize("case", sorted([*INLINE, *SHIPPED]))
def test_golden(case: str, tmp_path: Path, update_golden: bool) -> None:
    resolved = _resolve(case, tmp_path)
    llm_args = llm_args_for(resolved) if layout_of(resolved) == "llmapi" else None
    files = render_files(build_context(resolved, INPUTS, llm_args=llm_args))
    _write_tree(tmp_path / "repo", files)
    assert check_repo(tmp_path / "repo") == []
    assert layout_of(resolved) == case.split("-")[0]
    match_golden_tree(GOLDEN / case, {k: v for k, v in files.items() if not k.endswith("/")}, case, update_golden)
