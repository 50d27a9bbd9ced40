"""Golden deploy files for each target, one node and multi-node, all passing the offline checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from specdeploy.api import load_and_resolve
from specdeploy.deploy.check import check_files
from specdeploy.deploy.context import TARGETS, build_context
from specdeploy.deploy.render import render_files
from tests.helpers import match_golden_tree

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "deploy"
CASES = {
    "one-node": (
        "h200-eagle3",
        ("deploy.kubernetes.namespace=llm", "deploy.slurm.partition=gpu", "deploy.slurm.account=team-a"),
    ),
    "multi-node": ("h200-mtp-deepseek-v3-2node", ()),
    "one-node-no-token": (
        "h200-eagle3",
        ("deploy.kubernetes.hf_token_secret=null", "deploy.kubernetes.storage_class=fast-rwx"),
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden(case: str, update_golden: bool) -> None:
    source, sets = CASES[case]
    context = build_context(load_and_resolve(source, sets), TARGETS)
    files = render_files(context, TARGETS)
    problems, _ = check_files(files, context)
    assert problems == []
    match_golden_tree(GOLDEN / case, files, case, update_golden)
