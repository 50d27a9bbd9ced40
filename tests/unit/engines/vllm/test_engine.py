"""vLLM through the engine interface: `runtime.backend: vllm` validates, plans (emit.vllm, check.vllm; no Triton
steps) and emits the `vllm serve` files of every shipped vLLM profile exactly as the goldens hold them
(tests/golden/emit/vllm-*/; `pytest --update-golden` rewrites them)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from specdeploy.api import load_and_resolve, mechanisms
from specdeploy.engines.vllm.actions import CONFIG_FILE, SPEC_FILE, vllm_files
from specdeploy.errors import UsageError
from specdeploy.plan.planner import make_plan
from tests.helpers import match_golden_file

ROOT = Path(__file__).resolve().parents[4]
GOLDEN = ROOT / "tests" / "golden" / "emit"
CPU = ROOT / "profiles" / "cpu" / "cpu-smollm2-vllm.yaml"
FIXED = ("speculative.draft_len=3",)
"""The CPU profile tunes its draft length (draft_len: auto); the goldens hold K = 3."""
CASES: dict[str, tuple[Path, tuple[str, ...]]] = {
    "vllm-cpu-ngram": (
        CPU,
        (
            *FIXED,
            "speculative.mechanism=ngram",
            "speculative.draft_model=null",
            "speculative.options.max_matching_ngram_size=4",
        ),
    ),
    "vllm-cpu-draft_model": (
        CPU,
        (*FIXED, "speculative.mechanism=draft_target", "speculative.draft_model=specdeploy/smollm2-135m-drafter"),
    ),
    "vllm-cpu-eagle3": (CPU, FIXED),
    "vllm-cpu-suffix": (
        CPU,
        (
            "speculative.mechanism=suffix",
            "speculative.options=null",
            "speculative.draft_len=12",
            "speculative.draft_model=null",
            "speculative.options.max_cached_requests=1000",
        ),
    ),
    "vllm-h100-eagle3": (ROOT / "profiles" / "h100" / "h100-vllm-eagle3.yaml", ()),
    "vllm-h100-mtp-qwen3-next": (ROOT / "profiles" / "h100" / "h100-vllm-mtp-qwen3-next.yaml", ()),
}
TUNED = {"tune.draft_len": {"draft_len": 4, "schedule": {"1": 4, "4": 2, "16": 1}, "max_concurrency": 32}}


@pytest.mark.parametrize("name", sorted(CASES))
def test_vllm_emission_matches_golden(name: str, update_golden: bool, tmp_path: Path) -> None:
    path, sets = CASES[name]
    resolved = load_and_resolve(str(path), sets)
    texts, _ = vllm_files(resolved, {})
    assert set(texts) == {CONFIG_FILE, SPEC_FILE, "serve.sh"}
    (tmp_path / "serve.sh").write_text(texts["serve.sh"])
    assert subprocess.run(["sh", "-n", str(tmp_path / "serve.sh")], capture_output=True).returncode == 0
    config = yaml.safe_load(texts[CONFIG_FILE])
    assert config["speculative-config"] == json.loads(texts[SPEC_FILE])
    for file, text in texts.items():
        match_golden_file(GOLDEN / name / file, text, update_golden)


def test_a_tuned_schedule_becomes_num_speculative_tokens_per_batch_size(update_golden: bool) -> None:
    resolved = load_and_resolve(str(CASES["vllm-h100-eagle3"][0]))
    texts, out = vllm_files(resolved, TUNED)
    # speculation off above the tuned concurrency (32) up to max_num_seqs (64): a K = 0 range
    assert out.speculative is not None
    assert out.speculative["num_speculative_tokens_per_batch_size"] == [[1, 3, 4], [4, 15, 2], [16, 32, 1], [33, 64, 0]]
    assert out.speculative["num_speculative_tokens"] == 4
    match_golden_file(GOLDEN / "vllm-h100-eagle3-schedule" / CONFIG_FILE, texts[CONFIG_FILE], update_golden)


def test_a_fetched_hub_model_is_its_id_pinned_by_revision() -> None:
    """vLLM expands no variable in `--config`: a fetched hub checkpoint is named by id and commit, which vLLM finds
    in the hub cache, never as a `${HF_HUB_CACHE}/...` path; the drafter's commit goes to the speculative config."""
    resolved = load_and_resolve(str(CASES["vllm-h100-eagle3"][0]))
    target, draft = "a" * 40, "b" * 40
    texts, out = vllm_files(
        resolved,
        {"fetch.target": {"kind": "hub", "revision": target}, "fetch.draft": {"kind": "hub", "revision": draft}},
    )
    assert "${" not in texts[CONFIG_FILE] and out.speculative is not None
    assert (out.serve["model"], out.serve["revision"]) == ("meta-llama/Llama-3.1-8B-Instruct", target)
    assert (out.speculative["model"], out.speculative["revision"]) == ("yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", draft)
    assert out.origin["--revision"] == ("target", "revision")


def test_a_tune_record_with_ranges_emits_its_schedule() -> None:
    """What the tune step outputs (its lock record carries the canonical ranges beside the lower bounds) is
    emitted as the schedule: it was dropped, and the engine served K = 1 where the tune measured plain decoding
    faster (concurrency 4 here)."""
    resolved = load_and_resolve(str(CPU))
    record = {"draft_len": 1, "schedule": {"1": 1}, "ranges": [[1, 3, 1]], "max_concurrency": 3}
    _, out = vllm_files(resolved, {"tune.draft_len": record})
    assert out.speculative is not None
    assert out.speculative["num_speculative_tokens_per_batch_size"] == [[1, 3, 1], [4, 4, 0]]


def test_a_vllm_profile_plans_emit_and_self_check_without_triton() -> None:
    plan = make_plan(load_and_resolve(str(CPU)))
    ids = [s.id for s in plan.steps]
    assert ids == ["fetch.target", "fetch.draft", "tune.draft_len", "emit.vllm", "check.vllm"]  # draft_len: auto
    assert plan.steps[-1].depends_on == ("emit.vllm",)


def test_the_release_line_and_efficiency_profile_come_from_the_engine() -> None:
    from specdeploy.plugin.registry import get_engine

    resolved = load_and_resolve(str(CASES["vllm-h100-eagle3"][0]))
    assert resolved.line is not None and resolved.line.name == "0.32"
    assert get_engine("vllm").efficiency == "vllm"
    with pytest.raises(UsageError, match="no vLLM contract for '0.31.0'"):
        load_and_resolve(str(CPU), ("runtime.vllm_version=0.31.0",))


def test_the_matrix_has_a_vllm_column_from_the_plugins_declarations() -> None:
    support = {row.name: row.support.get("vllm") for row in mechanisms()}
    assert {name for name, lines in support.items() if lines} == {
        "ngram",
        "draft_target",
        "eagle",
        "eagle3",
        "mtp",
        "dspark",
        "suffix",
    }
    assert support["eagle3"] == ["0.32"] and support["sa"] is None and support["medusa"] is None


@pytest.mark.parametrize("mechanism", ["sa", "medusa"])
def test_a_mechanism_without_a_vllm_declaration_is_refused_at_validate(mechanism: str) -> None:
    with pytest.raises(UsageError) as caught:
        load_and_resolve(str(CPU), (f"speculative.mechanism={mechanism}",))
    assert "speculative.mechanism" in {issue.dotted for issue in caught.value.issues}


def test_what_vllm_cannot_honour_is_refused_at_emit_where_the_profile_wrote_it() -> None:
    resolved = load_and_resolve(str(CASES["vllm-h100-eagle3"][0]), ("speculative.options.dynamic_tree=true",))
    with pytest.raises(UsageError, match="no dynamic tree") as caught:
        vllm_files(resolved, {})
    assert caught.value.issues[0].dotted == "speculative.options.dynamic_tree"


def test_doctor_names_the_vllm_it_finds(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from specdeploy.engines.vllm import env
    from specdeploy.plugin.registry import get_engine

    fake = tmp_path / "python"
    fake.write_text('#!/bin/sh\necho \'{"distribution": "vllm-cpu", "version": "0.32.3"}\'\n')
    fake.chmod(0o755)
    monkeypatch.setenv(env.ENV_VAR, str(fake))
    env._query.cache_clear()
    lines, lacking = get_engine("vllm").doctor(None)
    assert lines["vllm"] == f"vllm-cpu 0.32.3 at {fake} (contract line 0.32)" and lacking == []
    env._query.cache_clear()


def test_a_vllm_tune_is_not_clamped_by_tensorrt_llms_schedule_rules() -> None:
    """TensorRT-LLM 1.2's rule (K at the smallest key = max_draft_len) once turned a measured {1: 0, 4: 3} into
    speculation off on vLLM, whose schedule has no such rule."""
    from specdeploy.tune.setup import setup_from

    setup = setup_from(load_and_resolve(str(CPU), ("speculative.draft_len=auto",)))
    assert setup.line == "0.32" and setup.trtllm_version is None
    trt = setup_from(load_and_resolve("h100-draft-target", ("speculative.draft_len=auto",)))
    assert trt.trtllm_version == "1.2.1"
