"""Hostile requests to the served reference model: each is answered INVALID_ARGUMENT with a reason, quickly,
and the model keeps serving. Before: a 30 MB prompt held the only instance while it was tokenized (28 s),
`serving.max_seq_len` was not enforced, and a missing input came back INTERNAL ('NoneType' ... 'as_numpy')."""

from __future__ import annotations

import re
import time

import pytest

from specdeploy.api import load_and_resolve
from specdeploy.render.actions import render_resolved
from specdeploy.render.model import RenderInputs
from tests.triton.reference_client import answer, http_generate


def test_bad_requests_are_invalid_arguments(tmp_path, server_factory):  # type: ignore[no-untyped-def]
    pytest.importorskip("torch")
    from tritonclient.utils import InferenceServerException

    resolved = load_and_resolve("cpu-smollm2", ("speculative.draft_len=2", "serving.max_seq_len=512"))
    repo = render_resolved(resolved, tmp_path / "repo", inputs=RenderInputs()).out
    server = server_factory(repo)
    server.load("smollm2", timeout=300)

    def infer(prompt: bytes | None, max_tokens: int = 4):  # type: ignore[no-untyped-def]
        return answer(
            server.grpc_url,
            "smollm2",
            {**({"text_input": prompt} if prompt is not None else {}), "max_tokens": max_tokens},
        )

    def refused(prompt: bytes | None, match: str) -> float:
        t0 = time.monotonic()
        with pytest.raises(InferenceServerException, match=match):  # a gRPC stream carries the message only
            infer(prompt)
        took = time.monotonic() - t0
        if prompt is None or len(prompt) < 1 << 16 and prompt.isascii():  # what JSON over HTTP can carry
            body = {"max_tokens": 4, **({"text_input": prompt.decode()} if prompt is not None else {})}
            refused = http_generate(f"127.0.0.1:{server.http_port}", "smollm2", body)
            assert refused["status"] == 400 and re.search(match, refused["error"]), refused  # INVALID_ARGUMENT
        return took

    assert refused(b"hello " * 1000, "exceeds max_seq_len 512")  # ~1,000 tokens, 6,000 bytes
    assert refused(b"x" * (8 << 20), "more than max_seq_len 512 tokens can hold") < 10  # refused untokenized
    refused(None, "text_input")
    refused(b"caf\xe9", "utf-8")
    assert infer(b"What is 2 + 2?")["text_output"].strip()  # still serving
