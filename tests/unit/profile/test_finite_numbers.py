"""`--json` output is RFC 8259 JSON (issue 30, item 15): `plan --json --set tune.time_budget_s=.inf` printed
`"value": Infinity` and exited 0. Every float of the profile (and of a mechanism's options) refuses NaN and
infinity at the schema, and no JSON writer of the CLI can emit them."""

from __future__ import annotations

import io
import json
import typing
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from specdeploy._io import write_json_atomic
from specdeploy.cli import main
from specdeploy.profile.schema import Profile


def strict(text: str) -> Any:
    """JSON as RFC 8259 has it: NaN and Infinity are not JSON."""

    def refuse(name: str) -> None:
        raise AssertionError(f"{name} in the output: not JSON")

    return json.loads(text, parse_constant=refuse)


def run_json(*args: str) -> tuple[int, Any, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stderr(err), redirect_stdout(out), pytest.raises(SystemExit) as done:
        main([*args, "--json"])
    assert "Traceback" not in err.getvalue(), err.getvalue()
    return int(done.value.code or 0), strict(out.getvalue()), err.getvalue()


def float_fields(model: type[BaseModel], at: str = "") -> list[tuple[str, str]]:
    """(dotted path, a YAML value with an infinity for it) of every float the model holds, at any depth."""
    found = []
    for name, info in model.model_fields.items():
        path = f"{at}{name}"
        kinds = [info.annotation, *typing.get_args(info.annotation)]
        nested = [k for k in kinds if isinstance(k, type) and issubclass(k, BaseModel)]
        if nested:
            found += float_fields(nested[0], f"{path}.")
        elif float in kinds:
            found.append((path, ".inf"))
        elif any(typing.get_origin(k) is dict and typing.get_args(k)[1] is float for k in kinds):
            found.append((path, "{4: .inf}"))
        elif any(typing.get_origin(k) is list and typing.get_args(k)[0] is float for k in kinds):
            found.append((path, "[.inf]"))
    return found


FLOATS = float_fields(Profile)


def test_every_float_of_the_profile_is_found() -> None:
    assert {p for p, _ in FLOATS} >= {
        "serving.kv_cache_free_gpu_memory_fraction",
        "tune.sla.p99_itl_ms",
        "tune.sla.p99_ttft_ms",
        "tune.acceptance_al",
        "tune.acceptance_rates",
        "tune.time_budget_s",
    }


@pytest.mark.parametrize(("path", "value"), FLOATS, ids=[p for p, _ in FLOATS])
@pytest.mark.parametrize("command", ["plan", "validate"])
def test_a_non_finite_float_is_refused_at_the_schema(command: str, path: str, value: str) -> None:
    for bad in (value, value.replace(".inf", ".nan")):
        code, doc, _ = run_json(command, "cpu-smollm2", "--set", f"{path}={bad}")
        assert code == 2, doc
        messages = [i["message"] for i in doc["error"]["issues"]]
        assert any(m.startswith("Input should be a finite number") for m in messages), messages


def test_mechanism_options_refuse_a_non_finite_float() -> None:
    code, doc, _ = run_json("plan", "h200-mtp-deepseek-v3", "--set", "speculative.options.relaxed_delta=.inf")
    assert code == 2 and doc["error"]["issues"][0]["path"] == "speculative.options.relaxed_delta"
    assert doc["error"]["issues"][0]["message"].startswith("Input should be a finite number")


def test_build_dry_run_json_refuses_infinity() -> None:
    code, doc, _ = run_json("build", "cpu-smollm2", "--dry-run", "--set", "tune.time_budget_s=.inf")
    assert code == 2 and doc["error"]["location"]["path"] == "tune.time_budget_s"


def test_a_result_json_cannot_hold_is_an_internal_error_never_printed(monkeypatch: pytest.MonkeyPatch) -> None:
    from specdeploy import api
    from specdeploy.plugin.matrix import MatrixRow

    monkeypatch.setattr(
        api,
        "mechanisms",
        lambda: [
            MatrixRow(
                name="x",
                summary="",
                needs_draft_model=False,
                support={},
                max_draft_len=float("nan"),
                trtllm_ranges={},
                source="x:X",
            )
        ],
    )
    code, doc, err = run_json("mechanisms")
    assert code == 3 and doc["error"]["code"] == 3 and "Out of range float values are not JSON compliant" in err


def test_a_file_json_cannot_hold_is_never_written(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        write_json_atomic(tmp_path / "result.json", {"tokens_per_s": float("inf")})
    assert list(tmp_path.iterdir()) == []
