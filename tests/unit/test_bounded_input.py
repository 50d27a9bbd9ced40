"""Input nested deeper than Python's parsers recurse, through every command that reads it (issue 30, items 12 and
13): a `--set` value 3000 levels deep, `speculative.options` 400 deep, a manifest, lock or repository manifest
thousands deep, YAML in check-deploy, a dataset line, a folder tree 1500 levels deep in an artifact. Each was a
RecursionError (exit 3, a traceback); each is now refused with its file and line (exit 2, or the command's own
problem report, exit 1), or walked. A repository manifest of `{` or `[1]` is a reported problem."""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from specdeploy.boundedio import MAX_DEPTH, InputError, loads_json, loads_yaml
from tests.helpers import billion_laughs, cli, llm_request, needs_triton_schema, write_profile

DEEP = 3000
LEVELS = 1500


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.fixture
def deep_tree() -> Iterator[Callable[[Path], None]]:
    """Plants a folder 1500 levels deep (a/a/.../a) holding one file under a given folder, made and removed with
    relative paths (PATH_MAX is 4096; pytest's own cleanup would recurse as deep)."""
    planted: list[Path] = []

    def plant(root: Path) -> None:
        planted.append(root)
        with _inside(root):
            for _ in range(LEVELS):
                Path("a").mkdir()
                os.chdir("a")
            Path("planted.txt").write_text("x")

    yield plant
    for root in planted:
        with _inside(root):
            os.chdir("/".join(["a"] * LEVELS))
            Path("planted.txt").unlink()
            for _ in range(LEVELS):
                os.chdir("..")
                Path("a").rmdir()


@contextlib.contextmanager
def _inside(folder: Path) -> Iterator[None]:
    here = Path.cwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(here)


def test_a_set_value_3000_deep_is_a_profile_error() -> None:
    code, _, err = cli("validate", "cpu-smollm2", "--set", f"speculative.options.x={nested(DEEP)}")
    assert code == 2 and f"is not valid YAML: nested deeper than {MAX_DEPTH} levels" in err


@pytest.mark.parametrize("how", ["file", "--set"])
def test_options_400_deep_are_a_located_profile_error(tmp_path: Path, how: str) -> None:
    value = "{a: " * 400 + "1" + "}" * 400
    if how == "--set":
        code, _, err = cli("validate", "cpu-smollm2", "--set", f"speculative.options={{x: {value}}}")
    else:
        text = f"extends: cpu-smollm2\nspeculative:\n  options: {{x: {value}}}\n"
        profile = write_profile(tmp_path / "deep.yaml", text)
        code, _, err = cli("validate", str(profile))
        assert f"{profile}:3:" in err
    assert code == 2 and f"nested deeper than {MAX_DEPTH} levels" in err


def test_a_deep_manifest_is_a_usage_error(art: Path) -> None:
    (art / "manifest.json").write_text(nested(DEEP))
    code, _, err = cli("verify", str(art))
    assert code == 2 and f"manifest.json is not readable JSON: nested deeper than {MAX_DEPTH} levels (line 1)" in err


def test_a_deep_lock_is_a_verify_problem(art: Path) -> None:
    (art / "specdeploy.lock").write_text('{"tuned":\n' + nested(DEEP) + "}")
    code, out, _ = cli("verify", str(art))
    assert code == 1 and f"specdeploy.lock: not a JSON object (nested deeper than {MAX_DEPTH} levels (line 2))" in out


def test_a_1500_level_tree_in_an_artifact_is_walked(art: Path, deep_tree: Callable[[Path], None]) -> None:
    deep_tree(art)
    code, out, _ = cli("verify", str(art))
    assert code == 1 and "/planted.txt (" in out and "not listed in the manifest" in out


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (
            "{",
            "specdeploy-repo.json:1:2: not readable: not valid JSON: Expecting property name enclosed in double quotes",
        ),
        ("[1]", "specdeploy-repo.json: must be a JSON object, not a list"),
        (nested(DEEP), f"specdeploy-repo.json:1: not readable: nested deeper than {MAX_DEPTH} levels"),
    ],
)
def test_a_repository_manifest_that_is_not_one_is_a_reported_problem(art: Path, content: str, problem: str) -> None:
    (art / "triton" / "specdeploy-repo.json").write_text(content)
    code, out, _ = cli("check-repo", str(art / "triton"))
    assert code == 1 and problem in out.splitlines()


def test_a_deep_repository_manifest_is_a_usage_error_at_serve(art: Path) -> None:
    (art / "triton" / "specdeploy-repo.json").write_text(nested(DEEP))
    code, _, err = cli("serve", str(art))
    assert code == 2 and f"specdeploy-repo.json is unreadable: nested deeper than {MAX_DEPTH} levels (line 1)" in err


def test_check_repo_walks_a_1500_level_tree(art: Path, deep_tree: Callable[[Path], None]) -> None:
    deep_tree(art / "triton")
    code, out, _ = cli("check-repo", str(art / "triton"))
    assert code == 1 and "a: model folder without config.pbtxt" in out


@needs_triton_schema
def test_render_pretend_over_a_1500_level_tree_lists_it(tmp_path: Path, deep_tree: Callable[[Path], None]) -> None:
    code, _, err = cli("render", "cpu-smollm2", "--out", str(tmp_path / "artifacts"))
    assert code == 0, err
    deep_tree(tmp_path / "artifacts" / "cpu-smollm2" / "triton")  # --out is the artifacts root
    code, out, _ = cli("render", "cpu-smollm2", "--out", str(tmp_path / "artifacts"), "--pretend", "--json")
    assert code == 0 and json.loads(out)["files"]["/".join(["a"] * LEVELS) + "/planted.txt"] == "delete"


def test_deep_yaml_in_check_deploy_is_a_reported_problem(tmp_path: Path) -> None:
    pytest.importorskip("kubernetes_validate")
    (tmp_path / "deploy.yaml").write_text("apiVersion: v1\nkind: ConfigMap\ndata:\n  x: " + nested(DEEP) + "\n")
    code, out, _ = cli("check-deploy", str(tmp_path))
    assert code == 1
    assert f"deploy.yaml: not valid YAML: nested deeper than {MAX_DEPTH} levels (line 4, column 68)" in out


def test_a_deep_dataset_line_is_a_located_error(tmp_path: Path) -> None:
    dataset = tmp_path / "prompts.jsonl"
    dataset.write_text(json.dumps({"question_id": 1, "category": "qa", "turns": ["hi"]}) + "\n" + nested(DEEP) + "\n")
    code, _, err = cli("validate", "cpu-smollm2", "--set", f"tune.dataset={dataset}")
    assert code == 2 and f"{dataset}:2: nested deeper than {MAX_DEPTH} levels" in err


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (nested(DEEP), "nested deeper than 64 levels (line 1)"),
        ('{"stop": "\\ud800"}', "a lone surrogate: not Unicode text"),
    ],
)
def test_sampling_parameters_a_client_sends_are_bounded(raw: str, problem: str) -> None:
    from specdeploy.serve.llm_inputs import BadRequest, parse

    with pytest.raises(BadRequest, match=re.escape(problem)):
        parse(llm_request(sampling_parameters=raw), 32)


def test_a_deep_step_cost_file_is_a_usage_error(tmp_path: Path) -> None:
    from specdeploy.errors import UsageError
    from specdeploy.perfmodel.calibrate import load_step_costs

    (tmp_path / "steps.json").write_text(nested(DEEP))
    with pytest.raises(UsageError, match=f"nested deeper than {MAX_DEPTH} levels"):
        load_step_costs(str(tmp_path / "steps.json"))


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (nested(MAX_DEPTH + 1), f"x:1: nested deeper than {MAX_DEPTH} levels"),
        ('{"a":\n NaN}', "x:2: not valid JSON: NaN is not a JSON number (RFC 8259 allows finite numbers only)"),
        ('["\\ud800"]', "x:1: a string holds \\ud800, a lone surrogate: not Unicode text"),
    ],
)
def test_the_json_reader_refuses_what_json_cannot_carry(text: str, problem: str) -> None:
    assert loads_json(nested(MAX_DEPTH)) == loads_json(nested(MAX_DEPTH))  # as deep as allowed: read
    with pytest.raises(InputError) as refused:
        loads_json(text, "x")
    assert str(refused.value) == problem


def test_the_yaml_reader_bounds_depth_and_what_aliases_expand_to() -> None:
    assert loads_yaml("a: 1\n---\nb: 2\n", documents=True) == [{"a": 1}, {"b": 2}]
    assert loads_yaml("a: &x [1]\nb: *x\n") == {"a": [1], "b": [1]}  # rendered Kubernetes YAML has anchors

    with pytest.raises(InputError, match=r"^x: more than 1048576 values \(aliases expand without bound\)$"):
        loads_yaml(billion_laughs(), "x")
    deeper = f"^x:1:{MAX_DEPTH + 1}: not valid YAML: nested deeper than {MAX_DEPTH} levels$"
    with pytest.raises(InputError, match=deeper):
        loads_yaml(nested(MAX_DEPTH + 1), "x")
