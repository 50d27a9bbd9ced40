"""Resolve the inline cases of cases.py (catalog models, offline) into Resolved profiles."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from specdeploy.api import load_and_resolve
from specdeploy.resolve.resolved import Resolved
from tests.helpers import write_profile


@pytest.fixture
def resolve_case(tmp_path: Path) -> Any:
    def _resolve(name: str, data: dict[str, Any]) -> Resolved:
        return load_and_resolve(str(write_profile(tmp_path / f"{name}.yaml", data)))

    return _resolve
