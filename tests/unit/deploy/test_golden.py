"""Golden deploy files for each target, one node and multi-node, all passing the offline checks."""

from __future__ import annotations

import difflib
import shutil
from pathlib import Path

import pytest

from specdeploy.api import load_and_resolve
from specdeploy.deploy.check import check_files
from specdeploy.deploy.context import TARGETS, build_context
from specdeploy.deploy.render import render_files

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "deploy"
CASES = {
    "one-node": ("h200-eagle3", ("deploy.kubernetes.namespace=llm", "deploy.slurm.partition=gpu",
                                 "deploy.slurm.account=team-a")),
    "multi-node": ("h200-mtp-deepseek-v3-2node", ()),
    "one-node-no-token": ("h200-eagle3", ("deploy.kubernetes.hf_token_secret=null",
                                          "deploy.kubernetes.storage_class=fast-rwx")),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden(case: str, update_golden: bool) -> None:
    source, sets = CASES[case]
    context = build_context(load_and_resolve(source, sets), TARGETS)
    files = render_files(context, TARGETS)
    problems, _ = check_files(files, context)
    assert problems == []
    golden = GOLDEN / case
    if update_golden:
        shutil.rmtree(golden, ignore_errors=True)
        for rel, data in files.items():
            (golden / rel).parent.mkdir(parents=True, exist_ok=True)
            (golden / rel).write_bytes(data)
        return
    expected = {p.relative_to(golden).as_posix(): p.read_bytes() for p in golden.rglob("*") if p.is_file()}
    assert sorted(files) == sorted(expected), "file set differs; run pytest --update-golden if intended"
    for rel, data in files.items():
        if data != expected[rel]:
            diff = "".join(difflib.unified_diff(expected[rel].decode().splitlines(True), data.decode().splitlines(True),
                                                f"golden/{rel}", f"rendered/{rel}"))
            pytest.fail(f"{case}/{rel} differs from its golden file:\n{diff}")
