"""Golden files for every valid mechanism x backend x version (tests/golden/emit/<case>/), and every emitted
key and flag checked against that version's contract table. `pytest --update-golden` rewrites them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from specdeploy.engines.trtllm.commands import bench_argv, serve_argv
from specdeploy.engines.trtllm.llm_api import llm_api_options
from specdeploy.engines.trtllm.tables import check_argv, check_llm_api_options, table_for
from specdeploy.plan.planner import make_plan
from tests.helpers import match_golden_file
from tests.unit.trtllm.cases import ENGINE, PYTORCH

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "emit"


def _emitted(resolved: Any) -> tuple[dict[str, Any], dict[str, list[str]]]:
    spec = resolved.profile.speculative
    options = llm_api_options(
        resolved, draft_len=resolved.draft_len, schedule=spec.schedule, max_concurrency=spec.max_concurrency
    )
    model = resolved.profile.target.model
    return options, {"serve": serve_argv(resolved, model), "bench": bench_argv(resolved, model)}


@pytest.mark.parametrize("name", sorted(PYTORCH))
def test_pytorch_emission_matches_golden_and_table(name: str, resolve_case: Any, update_golden: bool) -> None:
    resolved = resolve_case(name, PYTORCH[name])
    options, argvs = _emitted(resolved)
    table = table_for(resolved.line)
    assert check_llm_api_options(options, table) == []
    for argv in argvs.values():
        assert check_argv(argv, table) == []
    match_golden_file(GOLDEN / name / "llm_api_options.yaml", yaml.safe_dump(options, sort_keys=False), update_golden)
    match_golden_file(GOLDEN / name / "commands.json", json.dumps(argvs, indent=1) + "\n", update_golden)


@pytest.mark.parametrize("name", sorted(ENGINE))
def test_engine_steps_match_golden_and_table(name: str, resolve_case: Any, update_golden: bool) -> None:
    resolved = resolve_case(name, ENGINE[name])
    plan = make_plan(resolved)
    argv_steps = {s.id: list(s.argv) for s in plan.steps if s.argv}
    assert "engine.target" in argv_steps
    table = table_for(resolved.line)
    for argv in argv_steps.values():
        assert check_argv(argv, table) == []
    engine = resolved.profile.runtime.backend
    serve = serve_argv(resolved, resolved.profile.target.model, engine_dir="engines/engine.target-x")
    assert engine == "tensorrt" and check_argv(serve, table) == []
    match_golden_file(GOLDEN / name / "steps.json", json.dumps(argv_steps, indent=1) + "\n", update_golden)


def test_every_shipped_profile_emits_only_table_names() -> None:
    from specdeploy.api import load_and_resolve
    from specdeploy.profile.shipped import shipped_profiles

    for name, path in shipped_profiles().items():
        resolved = load_and_resolve(str(path))
        if resolved.profile.runtime.backend not in ("pytorch", "tensorrt"):  # TensorRT-LLM's tables only
            continue
        table = table_for(resolved.line)
        plan = make_plan(resolved)
        for step in plan.steps:
            assert not step.argv or check_argv(list(step.argv), table) == [], (name, step.id)
        if resolved.profile.runtime.backend == "pytorch":
            options, argvs = _emitted(resolved)
            assert check_llm_api_options(options, table) == [], name
            assert all(check_argv(a, table) == [] for a in argvs.values()), name


def test_serve_script_matches_golden_and_parses(resolve_case: Any, update_golden: bool, tmp_path: Path) -> None:
    """serve.sh: relocatable (its own folder, $SPECDEPLOY_TARGET, else the pinned snapshot under $HF_HUB_CACHE)."""
    import subprocess

    from specdeploy.engines.trtllm.commands import TARGET, serve_script
    from specdeploy.execute.portable import checkpoint_ref

    resolved = resolve_case("pytorch-1.2.1-eagle3", PYTORCH["pytorch-1.2.1-eagle3"])
    target = checkpoint_ref(resolved.profile.target.model, "f" * 40, {})
    script = serve_script(serve_argv(resolved, TARGET), target)
    (tmp_path / "serve.sh").write_text(script)
    assert subprocess.run(["sh", "-n", str(tmp_path / "serve.sh")], capture_output=True).returncode == 0
    match_golden_file(GOLDEN / "pytorch-1.2.1-eagle3" / "serve.sh", script, update_golden)
