"""`specdeploy ask`: one prompt to a served model over gRPC, inputs built from the model's own config."""

from __future__ import annotations

import queue
from dataclasses import dataclass
from typing import Any, ClassVar

from specdeploy.errors import StepFailed, UsageError

_MAX_TOKENS = ("max_tokens", "sampling_param_max_tokens", "request_output_len")

Scalar = str | int | float | bool
"""One element of a model's output: decoded text, or a number."""


@dataclass(frozen=True)
class Answer:
    """A served model's response to one prompt: each of its outputs by name, a single value when the model
    declares it one element, else the list."""

    schema_version: ClassVar[int] = 1
    model: str
    outputs: dict[str, Scalar | list[Scalar]]

    def to_dict(self) -> dict[str, object]:
        return {"schema_version": self.schema_version, "model": self.model, **self.outputs}


def ask(
    url: str, model: str, prompt: str, *, max_tokens: int = 64, draft_len: int | None = None, timeout: float = 300.0
) -> Answer:
    """Send `prompt`; return every output of the response (text decoded).

    `draft_len` overrides the served draft length for this request (0: no speculation); only models that take a
    `draft_len` input (the reference layout) can, and asking another one is an error rather than a silent no-op.
    """
    import numpy as np
    import tritonclient.grpc as grpcclient
    from tritonclient.utils import InferenceServerException

    client = grpcclient.InferenceServerClient(url)
    try:
        config = client.get_model_config(model, as_json=True, client_timeout=30)["config"]
        batched = int(config.get("max_batch_size", 0)) > 0
        names = {i["name"]: i for i in config.get("input", [])}
        inputs = []

        def add(name: str, value: np.ndarray, dtype: str) -> None:
            value = value.reshape((1, -1) if batched else (-1,))
            tensor = grpcclient.InferInput(name, list(value.shape), dtype)
            tensor.set_data_from_numpy(value)
            inputs.append(tensor)

        add("text_input", np.array([prompt.encode("utf-8")], dtype=object), "BYTES")
        for name in _MAX_TOKENS:
            if name in names:
                add(name, np.array([max_tokens], dtype=np.int32), "INT32")
                break
        if draft_len is not None:
            if "draft_len" not in names:
                raise UsageError(
                    f"model {model} takes no per-request draft length",
                    hint="only the reference layout does; rebuild to change a served draft length",
                )
            add("draft_len", np.array([draft_len], dtype=np.int32), "INT32")
        decoupled = bool(config.get("model_transaction_policy", {}).get("decoupled"))
        result = (
            streamed(client, model, inputs, timeout)
            if decoupled
            else client.infer(model, inputs, client_timeout=timeout)
        )
    except InferenceServerException as exc:
        raise StepFailed(f"request to {model} at {url} failed: {exc.message()}") from None
    out: dict[str, Scalar | list[Scalar]] = {}
    for output in config.get("output", []):
        value = result.as_numpy(output["name"])
        if value is None:
            continue
        flat = [v.decode("utf-8", "replace") if isinstance(v, bytes) else v.item() for v in value.reshape(-1)]
        out[output["name"]] = flat[0] if len(flat) == 1 and output.get("dims") in (["1"], [1]) else flat
    return Answer(model, out)


def streamed(client: Any, model: str, inputs: list[Any], timeout: float) -> Any:
    """A decoupled model answers over a gRPC stream (unary ModelInfer refuses it): its one, final response."""
    answers: queue.Queue[Any] = queue.Queue()
    client.start_stream(callback=lambda result, error: answers.put(error or result))
    try:
        client.async_stream_infer(model, inputs, enable_empty_final_response=True)
        last = None
        while True:
            try:
                item = answers.get(timeout=timeout)
            except queue.Empty:
                raise StepFailed(f"no answer from {model} within {timeout:.0f} s") from None
            if isinstance(item, Exception):
                raise item
            if item.get_response().outputs:
                last = item
            if item.get_response().parameters.get("triton_final_response").bool_param:
                return last
    finally:
        client.stop_stream()
