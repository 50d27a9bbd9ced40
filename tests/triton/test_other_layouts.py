"""llmapi: parsed/checked and loaded; without tensorrt_llm the server must report exactly that import.
reference: answers a real request end to end once specdeploy.engines.reference.runtime has `generate`."""

from __future__ import annotations

import importlib

import pytest

from specdeploy.api import load_and_resolve
from specdeploy.render.actions import render_resolved
from specdeploy.render.check import check_repo
from specdeploy.render.model import RenderInputs
from tests.triton.helpers import LLMAPI
from tests.triton.reference_client import answer


def test_llmapi_load_fails_on_the_tensorrt_llm_import(write_profile, tmp_path, server_factory):  # type: ignore[no-untyped-def]
    from tritonclient.utils import InferenceServerException

    if importlib.util.find_spec("tensorrt_llm") is not None:
        pytest.skip("tensorrt_llm is installed here: the load would try a real LLM")
    repo = render_resolved(load_and_resolve(str(write_profile(LLMAPI))), tmp_path / "repo").out
    assert check_repo(repo) == []
    server = server_factory(repo)
    with pytest.raises(InferenceServerException) as err:
        server.load("tensorrt_llm")
    assert "No module named 'tensorrt_llm'" in str(err.value) + server.log()


def test_reference_layout_answers_with_the_same_tokens_as_the_cli(tmp_path, server_factory):  # type: ignore[no-untyped-def]
    """The rendered reference repository serves the CPU runtime: same tokens as `specdeploy generate`. Rendered as
    a tune that turned speculation off leaves it: plain by default, and a request's own `draft_len` speculates with
    the drafter the repository still loads; the same tokens either way, each response says which K served it."""
    pytest.importorskip("torch")
    from tritonclient.utils import InferenceServerException

    from specdeploy.api import generate

    sets = ("speculative.draft_len=3",)
    question = "What is 2 + 2?"
    local = generate("cpu-smollm2", question, sets, max_tokens=12)
    resolved = load_and_resolve("cpu-smollm2", sets)
    tuned_off = RenderInputs(draft_len=0, schedule={1: 0})
    repo = render_resolved(resolved, tmp_path / "repo", inputs=tuned_off).out
    server = server_factory(repo)
    server.load("smollm2", timeout=300)

    def infer(draft_len: int | None):  # type: ignore[no-untyped-def]
        own = {} if draft_len is None else {"draft_len": draft_len}
        return answer(server.grpc_url, "smollm2", {"text_input": question, "max_tokens": 12, **own})

    for draft_len, served_k in ((None, 0), (3, 3)):
        result = infer(draft_len)
        assert result["output_ids"] == local.tokens
        assert result["text_output"] == local.text and local.text.strip()
        assert result["draft_len"] == served_k
        assert result["tokens_per_s"] > 0
        assert (result["acceptance_rate"] > 0) == (served_k > 0)  # the head drafts some of it right
    assert local.mechanism == "eagle3" and local.draft_len == 3
    with pytest.raises(InferenceServerException, match="draft_len must be between 0 and 32, got 33"):
        infer(33)
