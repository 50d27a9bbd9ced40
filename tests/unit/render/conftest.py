"""Render tests build contexts from inline profiles whose checkpoints are local folders (tests/fixtures)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from specdeploy.api import load_and_resolve
from specdeploy.resolve.resolved import Resolved
from tests.fixtures.triton_models import write_models


@pytest.fixture
def resolve_inline(tmp_path: Path) -> Callable[..., Resolved]:
    """YAML with TARGET/DRAFT placeholders -> Resolved (profile file named `name`)."""
    target, draft = write_models(tmp_path / "models")

    def resolve(body: str, name: str = "case", sets: tuple[str, ...] = ()) -> Resolved:
        path = tmp_path / f"{name}.yaml"
        path.write_text(body.replace("TARGET", str(target)).replace("DRAFT", str(draft)))
        return load_and_resolve(str(path), sets)

    return resolve
