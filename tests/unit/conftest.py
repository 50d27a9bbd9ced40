"""Fixtures the unit tests share: a tiny built artifact."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers import LLAMA_31_8B_CONFIG, local_model, skip_without_triton_schema, write_profile


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An artifact `build` made of a tiny n-gram profile (Llama-3.1-8B's shape, a 64-byte weights file), once per
    test module; renders Triton's config, so a test using it skips without the triton extra."""
    skip_without_triton_schema()
    from specdeploy.api import load_and_resolve
    from specdeploy.execute.build import run_build
    from specdeploy.plan.planner import make_plan

    root = tmp_path_factory.mktemp("verify")
    model = local_model(root / "llama", LLAMA_31_8B_CONFIG)
    (model / "model.safetensors").write_bytes(b"w" * 64)
    profile = write_profile(
        root / "tiny.yaml",
        {
            "target": {"model": str(model)},
            "hardware": {"gpu": "h200"},
            "speculative": {"mechanism": "ngram", "draft_len": 4},
            "serving": {"max_batch_size": 16},
        },
    )
    resolved = load_and_resolve(str(profile))
    assert run_build(make_plan(resolved), resolved, root / "out").ok
    return root / "out" / "tiny"


@pytest.fixture
def art(built: Path, tmp_path: Path) -> Path:
    """A copy of `built` this test may change."""
    copy = tmp_path / "tiny"
    shutil.copytree(built, copy, symlinks=True)
    return copy
