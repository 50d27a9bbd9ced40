"""`check-deploy` on folders that hold no deploy files, files that are not Kubernetes objects, or a Triton repository:
each is reported (exit 1 or 2), never a traceback. In process, as `main` runs for a user."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import cli


def _needs_deploy_tools() -> None:
    from specdeploy.deploy.check import tools_available

    if not tools_available():
        pytest.skip("the deploy extra (kubernetes-validate, shellcheck) is not installed")


@pytest.mark.parametrize(
    ("name", "text", "problem"),
    [
        ("a.yaml", "apiVersion: v1\nkind: [\n", "a.yaml: not valid YAML: "),  # a ParserError traceback, exit 3
        ("a.yaml", "- apiVersion: v1\n  kind: Pod\n", "a.yaml: object 0: not a Kubernetes object"),  # AttributeError
        ("a.yaml", "name: x\nlayout: engine\n", "a.yaml: object 0: not a Kubernetes object"),  # KeyError
        ("a.yml", "kind: Pod\n", "a.yml: object 0: not a Kubernetes object"),  # not checked: "holds no deploy files"
    ],
)
def test_check_deploy_reports_a_file_that_is_not_a_kubernetes_object(
    tmp_path: Path, name: str, text: str, problem: str
) -> None:
    _needs_deploy_tools()
    (tmp_path / name).write_text(text)
    code, out, err = cli("check-deploy", str(tmp_path))
    assert code == 1 and problem in out + err and "Traceback" not in err, (out, err)


def test_check_deploy_of_a_triton_repository_says_what_to_pass(tmp_path: Path) -> None:
    _needs_deploy_tools()
    assert cli("render", "h200-eagle3", "--out", str(tmp_path))[0] == 0
    code, _, err = cli("check-deploy", str(tmp_path / "h200-eagle3" / "triton"))  # KeyError: 'apiVersion', exit 3
    assert code == 2 and "is a Triton repository" in err and "OUT/<profile>/deploy" in err, err


def test_check_deploy_of_a_folder_without_deploy_files_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "README").write_text("not a deploy file\n")
    code, _, err = cli("check-deploy", str(tmp_path))  # "no problems", exit 0
    assert code == 2 and "holds no deploy files" in err, err
