"""Fixtures the functional tests share."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import hub_draft_target_profile


@pytest.fixture
def hub(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """(profile, env) of a draft/target profile whose models sit in an offline hub cache (tests.helpers)."""
    return hub_draft_target_profile(tmp_path)
