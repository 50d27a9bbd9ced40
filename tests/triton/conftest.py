"""The real-tritonserver tier: a cached backend folder, a tiny real tokenizer, inline profiles, rendered repos."""

from __future__ import annotations

import os
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import pytest

from specdeploy.render.model import RenderInputs
from tests.fixtures.triton_models import write_models

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
WORDS = ["<unk>", "<pad>", "</s>", "hello", "world", "speculative", "decoding", "is", "fast"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/triton/" in str(item.fspath):
            item.add_marker(pytest.mark.triton)


@pytest.fixture(scope="session")
def backends() -> Path:
    """The python backend (+ stub for the system Python + numpy<2) and the fake tensorrtllm backend, cached."""
    from specdeploy.render.backends import prepare_backends
    from specdeploy.runtime_paths import pytriton_root

    if pytriton_root() is None:
        pytest.skip("nvidia-pytriton is not installed (pip install 'specdeploy[triton]')")
    cache = Path(os.environ.get("SPECDEPLOY_CACHE") or Path(os.environ.get("TMPDIR", "/tmp")) / "specdeploy-test-cache")
    return prepare_backends(cache, extra={"tensorrtllm": FIXTURES / "fake_tensorrtllm_backend.py"})


@pytest.fixture(scope="session")
def backends_with_trtllm_double(backends: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A backend folder whose `python/` holds the shared python backend's files (linked) + the `tensorrt_llm`
    TEST DOUBLE (tests/fixtures/fake_trtllm): the stub runs Python isolated and ignores PYTHONPATH, but its
    backend folder is on its sys.path. Only servers started with this folder import the double."""
    folder = tmp_path_factory.mktemp("backends-trtllm-double")
    (folder / "python").mkdir()
    for entry in (backends / "python").iterdir():
        (folder / "python" / entry.name).symlink_to(entry)
    (folder / "python" / "tensorrt_llm").symlink_to(FIXTURES / "fake_trtllm" / "tensorrt_llm")
    return folder


@pytest.fixture(scope="session")
def tiny_tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real (WordLevel) tokenizer saved as tokenizer.json + PreTrainedTokenizerFast files."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    folder = tmp_path_factory.mktemp("tokenizer")
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>", eos_token="</s>")
    fast.save_pretrained(folder)
    return folder


@pytest.fixture
def write_profile(tmp_path: Path):  # type: ignore[no-untyped-def]
    """Write an inline profile whose target is a local folder holding Llama-3.1-8B's config.json."""
    target, draft = write_models(tmp_path)

    def write(body: str, name: str = "profile") -> Path:
        path = tmp_path / f"{name}.yaml"
        path.write_text(body.replace("TARGET", str(target)).replace("DRAFT", str(draft)))
        return path

    return write


@pytest.fixture
def engine_inputs(tiny_tokenizer: Path, tmp_path: Path) -> RenderInputs:
    engines = tmp_path / "engines"
    return RenderInputs(
        engine_dir=str(engines / "target"),
        draft_engine_dir=str(engines / "draft"),
        tokenizer_dir=str(tiny_tokenizer),
        site_packages=sysconfig.get_paths()["purelib"],
    )


@pytest.fixture
def server_factory(backends: Path, tmp_path: Path) -> Iterator:  # type: ignore[type-arg]
    from specdeploy.render.server import start_server

    started = []

    def start(repo: Path):  # type: ignore[no-untyped-def]
        server = start_server(repo, backends, tmp_path / "server.log", extra_args=("--disable-auto-complete-config",))
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
