"""The real-vLLM tier: vLLM's own environment (`make vllm-env`) runs every check here; none imports vllm."""

from __future__ import annotations

import pytest

from specdeploy.engines.vllm import env


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/vllm/" in str(item.fspath):
            item.add_marker(pytest.mark.vllm)


@pytest.fixture(scope="session")
def vllm_install() -> env.VllmInstall:
    """The installed vLLM; the tier skips, saying why, where there is none (CI builds it with `make install`)."""
    found = env.installed()
    if found is None:
        pytest.skip(f"no vLLM environment: {env.HINT}")
    return found
