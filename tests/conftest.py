"""Test-wide isolation: no colour, fixed width, Hugging Face offline, caches and work dirs in tmp."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# huggingface_hub reads HF_HUB_OFFLINE once, when it is first imported, and collection imports it (through the
# runtime tests' transformers) before any fixture runs: set here, no in-process fetch of a test reaches the hub.
os.environ["HF_HUB_OFFLINE"] = "1"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="Rewrite golden files under tests/golden/ instead of comparing against them.",
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


@pytest.fixture(autouse=True)
def _isolation(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("HF_TOKEN", raising=False)
    cache = tmp_path_factory.getbasetemp() / "hf-cache"
    cache.mkdir(exist_ok=True)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    if "SPECDEPLOY_CACHE" not in os.environ:
        # the converted SmolLM2 copy is expensive to rebuild: share one per machine, never the user's home
        monkeypatch.setenv("SPECDEPLOY_CACHE", str(Path(os.environ.get("TMPDIR", "/tmp")) / "specdeploy-test-cache"))
