"""Reference model (specdeploy): the CPU reference runtime answering Triton requests, batched in flight.

`execute` validates each request and hands it to one background decode loop
(specdeploy.engines.reference.triton_model.ReferenceModel, the runtime's in-flight batching up to
serving.max_batch_size) and returns None at once; the loop answers each request when it finishes, or after every
step with `stream` true. Decoupled or not, every
answer goes through the request's response sender (from the loop's thread), the last with
TRITONSERVER_RESPONSE_COMPLETE_FINAL: python_backend README.md @ r24.10 (01d0ad8; tritonserver 2.51 = 24.10),
"Decoupled mode", and "Default Mode": "Starting from 24.06, models may choose to send the response using the
`InferenceResponseSender`" — exactly one response per request, FINAL with it or after it. So a model that is
not decoupled (serving.streaming false) answers unary gRPC, /infer and /generate, and refuses `stream`.
The draft length follows the tuned schedule at the live batch size; a request may set its own (input
`draft_len`, 0..32) to A/B speculation on the live server. Greedy output is the same either way. Every
response says the K that served it (`draft_len`) and the batch it decoded in.

A request whose gRPC client cancelled it leaves the batch: the loop asks `response_sender.is_cancelled()`
(python_backend README "Request Cancellation Handling"; the tag it arrived in was not read: the bundled 2.51 has it,
tests/triton/test_reference_cancel.py) every 0.25 s of decoding and answers CANCELLED.
A bad request is answered INVALID_ARG (error codes: triton-inference-server/python_backend README.md, "Error
Codes", `pb_utils.TritonError(message, code)`; the bundled 2.51 stub has them) and the model keeps serving.
"""

import json
import os
import site

import numpy as np
import triton_python_backend_utils as pb_utils

TYPES = {"text_output": object, "finish_reason": object, "output_ids": np.int32, "tokens_per_s": np.float32,
         "acceptance_rate": np.float32, "draft_len": np.int32, "batch_size": np.int32, "num_input_tokens": np.uint32}


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        params = {k: v["string_value"] for k, v in config.get("parameters", {}).items()}
        # the stub ignores the venv: add it (and its .pth files); the serving host's, unless the config names one
        found = params.get("site_packages") or os.environ.get("SPECDEPLOY_SITE_PACKAGES", "")
        if found:
            site.addsitedir(found)
        from specdeploy.engines.reference.triton_model import ReferenceModel

        self.names = [i["name"] for i in config.get("input", [])]
        self.model = ReferenceModel(params, decoupled=pb_utils.using_decoupled_model_transaction_policy(config))

    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            try:
                inputs = {}
                for name in self.names:
                    tensor = pb_utils.get_input_tensor_by_name(request, name)
                    if tensor is not None:
                        inputs[name] = tensor.as_numpy()
                self.model.submit(inputs, _sender(sender), _failer(sender), sender.is_cancelled)
            except Exception as exc:  # one failed request, not a crashed model
                _failer(sender)(exc)
        return None

    def finalize(self):
        self.model.close()


def _sender(sender):
    def send(outputs, final):
        tensors = [pb_utils.Tensor(name, np.array(value if name == "output_ids" else [value], dtype=TYPES[name]))
                   for name, value in outputs.items()]
        flags = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL if final else 0
        sender.send(pb_utils.InferenceResponse(output_tensors=tensors), flags=flags)

    return send


def _failer(sender):
    def fail(exc):
        bad = isinstance(exc, ValueError) or getattr(exc, "exit_code", None) == 2  # specdeploy UsageError
        code = pb_utils.TritonError.INVALID_ARG if bad else pb_utils.TritonError.INTERNAL
        if getattr(exc, "cancelled", False):  # the client cancelled it (RequestCancelled)
            code = pb_utils.TritonError.CANCELLED
        sender.send(pb_utils.InferenceResponse(error=pb_utils.TritonError(str(exc), code)),
                    flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)

    return fail
