"""tensorrt_llm_bls (specdeploy): preprocessing -> tensorrt_llm (or a draft/target loop) -> postprocessing.

Draft/target (`num_draft_tokens` > 0 and a draft model): the draft proposes min(K, remaining) tokens, the
target verifies them as `draft_input_ids` and returns the accepted ones plus one; repeat until max_tokens,
the end id, or no progress. Batch 1, no streaming (NVIDIA's BLS has the same limits).
"""

import json

import numpy as np
import triton_python_backend_utils as pb_utils

_PLACEHOLDER = "$" "{"  # a fill_template placeholder left unfilled counts as unset


def _param(config, key, default=""):
    value = config.get("parameters", {}).get(key, {}).get("string_value", default)
    return default if _PLACEHOLDER in value else value


def _first(request, name, default):
    tensor = pb_utils.get_input_tensor_by_name(request, name)
    return default if tensor is None else tensor.as_numpy().reshape(-1)[0]


def _call(model, inputs, outputs):
    """One BLS request; raise the step model's error instead of returning it."""
    tensors = [pb_utils.Tensor(name, value) for name, value in inputs.items() if value is not None]
    response = pb_utils.InferenceRequest(model_name=model, requested_output_names=outputs,
                                         inputs=tensors).exec()
    if response.has_error():
        raise pb_utils.TritonModelException(f"{model}: {response.error().message()}")
    return {name: pb_utils.get_output_tensor_by_name(response, name).as_numpy() for name in outputs}


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.decoupled = pb_utils.using_decoupled_model_transaction_policy(config)
        self.target = _param(config, "tensorrt_llm_model_name", "tensorrt_llm")
        self.draft = _param(config, "tensorrt_llm_draft_model_name", "")
        self.default_k = int(_param(config, "num_draft_tokens", "0") or 0)

    def execute(self, requests):
        responses = []
        for request in requests:
            try:
                response = self._one(request)
            except Exception as exc:  # an error response for this request, the model stays up
                response = pb_utils.InferenceResponse(error=pb_utils.TritonError(str(exc)))
            if self.decoupled:
                request.get_response_sender().send(response, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
            else:
                responses.append(response)
        return None if self.decoupled else responses

    def _one(self, request):
        text = pb_utils.get_input_tensor_by_name(request, "text_input").as_numpy().reshape(1, 1)
        max_tokens = int(_first(request, "max_tokens", 16))
        k = int(_first(request, "num_draft_tokens", self.default_k))
        pre = _call("preprocessing", {"QUERY": text, "REQUEST_OUTPUT_LEN": np.array([[max_tokens]], np.int32)},
                    ["INPUT_ID", "REQUEST_INPUT_LEN", "OUT_END_ID", "OUT_PAD_ID"])
        prompt = pre["INPUT_ID"][0, :int(pre["REQUEST_INPUT_LEN"][0, 0])].tolist()
        end_id = int(pre["OUT_END_ID"][0, 0])
        if self.draft and k > 0:
            tokens, accepted, drafted = self._speculate(prompt, max_tokens, k, end_id)
        else:
            tokens, accepted, drafted = self._generate(self.target, prompt, max_tokens, end_id), 0, 0
        post = _call("postprocessing", {"TOKENS_BATCH": np.array([[tokens]], np.int32),
                                        "SEQUENCE_LENGTH": np.array([[len(tokens)]], np.int32)}, ["OUTPUT"])
        return pb_utils.InferenceResponse(output_tensors=[
            pb_utils.Tensor("text_output", post["OUTPUT"].reshape(1, -1)),
            pb_utils.Tensor("total_accepted_draft_tokens", np.array([[accepted]], np.int32)),
            pb_utils.Tensor("total_draft_tokens", np.array([[drafted]], np.int32)),
        ])

    @staticmethod
    def _generate(model, ids, count, end_id, draft=None):
        inputs = {"input_ids": np.array([ids], np.int32), "input_lengths": np.array([[len(ids)]], np.int32),
                  "request_output_len": np.array([[count]], np.int32), "end_id": np.array([[end_id]], np.int32),
                  "draft_input_ids": np.array([draft], np.int32) if draft else None}
        out = _call(model, inputs, ["output_ids", "sequence_length"])
        return out["output_ids"][0, 0, :int(out["sequence_length"][0, 0])].tolist()

    def _speculate(self, prompt, max_tokens, k, end_id):
        tokens, accepted, drafted = [], 0, 0
        while len(tokens) < max_tokens:
            context = prompt + tokens
            remaining = max_tokens - len(tokens)
            draft = self._generate(self.draft, context, min(k, remaining), end_id)[:remaining]
            verified = self._generate(self.target, context, len(draft) + 1, end_id, draft)[:remaining]
            if not verified:
                break
            drafted += len(draft)
            accepted += next((i for i, (a, b) in enumerate(zip(draft, verified)) if a != b),
                             min(len(draft), len(verified)))
            tokens += verified
            if end_id in verified:
                break
        return tokens, accepted, drafted
