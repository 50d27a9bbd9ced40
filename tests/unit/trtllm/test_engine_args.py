"""Engine build commands against the converters' transcribed argument tables (issue #15): ReDrafter's
converter has no --pp_size and requires --base_model_checkpoint_dir; the Medusa / EAGLE / ReDrafter
converters take --dtype only as float32 / bfloat16 / float16."""

from __future__ import annotations

from typing import Any

import pytest

from specdeploy.engines.trtllm.tables import check_argv, table_for
from specdeploy.engines.trtllm.versions import LINE_1_2
from specdeploy.issues import ProfileError
from specdeploy.plan.planner import make_plan
from tests.unit.trtllm.cases import ENGINE

T12 = table_for(LINE_1_2)
REDRAFTER = "examples/redrafter/convert_checkpoint.py"


def _steps(resolved: Any) -> dict[str, list[str]]:
    return {s.id: list(s.argv) for s in make_plan(resolved).steps if s.argv}


def test_redrafter_converter_arguments(resolve_case: Any) -> None:
    argv = _steps(resolve_case("r", ENGINE["tensorrt-1.2.1-redrafter"]))["convert.target"]
    assert "--pp_size" not in argv and argv[argv.index("--base_model_checkpoint_dir") + 1] == "${convert.base.dir}"
    assert check_argv(argv, T12) == []
    with_pp = [*argv, "--pp_size", "1"]
    assert check_argv(with_pp, T12) == [f"{REDRAFTER}: unknown option --pp_size"]
    i = argv.index("--base_model_checkpoint_dir")
    assert check_argv(argv[:i] + argv[i + 2 :], T12) == [
        f"{REDRAFTER}: required option --base_model_checkpoint_dir missing"
    ]


def test_redrafter_refuses_pipeline_parallel_at_validate(resolve_case: Any) -> None:
    """Located at hardware.pipeline_parallel by `validate`, not only when `plan` builds the converter argv."""
    data = {**ENGINE["tensorrt-1.2.1-redrafter"], "hardware": {"gpu": "h200", "count": 2, "pipeline_parallel": 2}}
    with pytest.raises(ProfileError) as err:
        resolve_case("p", data)
    assert [i.path for i in err.value.issues] == [("hardware", "pipeline_parallel")]
    assert "pipeline" in err.value.issues[0].message and err.value.issues[0].line


def test_spec_converters_resolve_dtype_auto_from_the_config(resolve_case: Any) -> None:
    steps = _steps(resolve_case("a", ENGINE["tensorrt-1.2.1-medusa-dtype-auto"]))
    convert = steps["convert.target"]
    assert convert[convert.index("--dtype") + 1] == "float16"  # vicuna-7b-v1.3 config.json torch_dtype
    assert check_argv(convert, T12) == []
    bad = [*convert[: convert.index("--dtype")], "--dtype", "auto", *convert[convert.index("--dtype") + 2 :]]
    assert check_argv(bad, T12) == [
        "examples/medusa/convert_checkpoint.py: --dtype 'auto' not in ['float32', 'bfloat16', 'float16']"
    ]


def test_serve_needs_its_model() -> None:
    assert check_argv(["trtllm-serve", "--port", "8000"], T12) == ["trtllm-serve: missing positional argument 'model'"]
