"""Hostile requests to the served reference model: each is answered INVALID_ARGUMENT with a reason, quickly,
and the model keeps serving. Before: a 30 MB prompt held the only instance while it was tokenized (28 s),
`serving.max_seq_len` was not enforced, and a missing input came back INTERNAL ('NoneType' ... 'as_numpy')."""

from __future__ import annotations

import time

import numpy as np
import pytest

from specdeploy.api import load_and_resolve
from specdeploy.render.actions import render_resolved
from specdeploy.render.context import RenderInputs


def test_bad_requests_are_invalid_arguments(tmp_path, server_factory):  # type: ignore[no-untyped-def]
    pytest.importorskip("torch")
    import tritonclient.grpc as grpcclient
    from tritonclient.utils import InferenceServerException

    resolved = load_and_resolve("cpu-smollm2", ("speculative.draft_len=2", "serving.max_seq_len=512"))
    repo = render_resolved(resolved, tmp_path / "repo", inputs=RenderInputs()).out
    server = server_factory(repo)
    server.load("smollm2", timeout=300)
    client = server.client()

    def infer(prompt: bytes | None, max_tokens: int = 4):  # type: ignore[no-untyped-def]
        inputs = []
        if prompt is not None:
            text = grpcclient.InferInput("text_input", [1], "BYTES")
            text.set_data_from_numpy(np.array([prompt], dtype=object))
            inputs.append(text)
        limit = grpcclient.InferInput("max_tokens", [1], "INT32")
        limit.set_data_from_numpy(np.array([max_tokens], dtype=np.int32))
        inputs.append(limit)
        return client.infer("smollm2", inputs, client_timeout=300)

    def refused(prompt: bytes | None, match: str) -> float:
        t0 = time.monotonic()
        with pytest.raises(InferenceServerException, match=match) as err:
            infer(prompt)
        assert "INVALID_ARG" in str(err.value.status()), err.value.status()
        return time.monotonic() - t0

    assert refused(b"hello " * 1000, "exceeds max_seq_len 512")  # ~1,000 tokens, 6,000 bytes
    assert refused(b"x" * (8 << 20), "more than max_seq_len 512 tokens can hold") < 10  # refused untokenized
    refused(None, "text_input")
    refused(b"caf\xe9", "utf-8")
    answer = infer(b"What is 2 + 2?")  # still serving
    assert answer.as_numpy("text_output")[0].decode().strip()
