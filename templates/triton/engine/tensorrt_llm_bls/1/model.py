"""tensorrt_llm_bls (specdeploy): preprocessing -> tensorrt_llm (or a draft/target loop) -> postprocessing.

Draft/target (`num_draft_tokens` > 0 and a draft model): the draft proposes min(K, remaining) tokens, the
target verifies them as `draft_input_ids` and returns the accepted ones plus one; repeat until max_tokens,
the end id, a stop word, or no progress. Batch 1, no streaming (NVIDIA's BLS has the same limits).
Every declared input is read: `end_id`/`pad_id`/`stop_words`/`bad_words` through preprocessing, and
`temperature`/`top_k`/`top_p`/`seed` forwarded to both models (as `runtime_top_k`/`runtime_top_p`/`seed`).
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


def _tensor(request, name, shape=(1, -1)):
    tensor = pb_utils.get_input_tensor_by_name(request, name)
    return None if tensor is None else tensor.as_numpy().reshape(shape)


_SAMPLING = {"temperature": "temperature", "top_k": "runtime_top_k", "top_p": "runtime_top_p", "seed": "seed"}


def _stop_words(word_list):
    """`[2, n]` word list (flat ids, cumulative offsets padded with -1) -> the token sequences."""
    words, start = [], 0
    for end in (int(o) for o in word_list[1] if o > 0):
        words.append([int(t) for t in word_list[0][start:end]])
        start = end
    return words


def _stopped(tokens, words):
    """Cut after the first stop word that `tokens` contains; (tokens, whether one was found)."""
    for i in range(len(tokens)):
        for word in words:
            if word and tokens[i:i + len(word)] == word:
                return tokens[:i + len(word)], True
    return tokens, False


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
        pre = _call("preprocessing", {"QUERY": text, "REQUEST_OUTPUT_LEN": np.array([[max_tokens]], np.int32),
                                      "END_ID": _tensor(request, "end_id"), "PAD_ID": _tensor(request, "pad_id"),
                                      "STOP_WORDS_DICT": _tensor(request, "stop_words"),
                                      "BAD_WORDS_DICT": _tensor(request, "bad_words")},
                    ["INPUT_ID", "REQUEST_INPUT_LEN", "OUT_END_ID", "OUT_PAD_ID", "STOP_WORDS_IDS", "BAD_WORDS_IDS"])
        prompt = pre["INPUT_ID"][0, :int(pre["REQUEST_INPUT_LEN"][0, 0])].tolist()
        shared = {"end_id": pre["OUT_END_ID"].reshape(1, 1), "pad_id": pre["OUT_PAD_ID"].reshape(1, 1),
                  "stop_words_list": pre["STOP_WORDS_IDS"][:1], "bad_words_list": pre["BAD_WORDS_IDS"][:1],
                  **{key: _tensor(request, name, (1, 1)) for name, key in _SAMPLING.items()}}
        stops = _stop_words(pre["STOP_WORDS_IDS"][0])
        if self.draft and k > 0:
            tokens, accepted, drafted = self._speculate(prompt, max_tokens, k, shared, stops)
        else:
            tokens, accepted, drafted = self._generate(self.target, prompt, max_tokens, shared), 0, 0
        post = _call("postprocessing", {"TOKENS_BATCH": np.array([[tokens]], np.int32),
                                        "SEQUENCE_LENGTH": np.array([[len(tokens)]], np.int32)}, ["OUTPUT"])
        return pb_utils.InferenceResponse(output_tensors=[
            pb_utils.Tensor("text_output", post["OUTPUT"].reshape(1, -1)),
            pb_utils.Tensor("total_accepted_draft_tokens", np.array([[accepted]], np.int32)),
            pb_utils.Tensor("total_draft_tokens", np.array([[drafted]], np.int32)),
        ])

    @staticmethod
    def _generate(model, ids, count, shared, draft=None):
        inputs = {"input_ids": np.array([ids], np.int32), "input_lengths": np.array([[len(ids)]], np.int32),
                  "request_output_len": np.array([[count]], np.int32), **shared,
                  "draft_input_ids": np.array([draft], np.int32) if draft else None}
        out = _call(model, inputs, ["output_ids", "sequence_length"])
        return out["output_ids"][0, 0, :int(out["sequence_length"][0, 0])].tolist()

    def _speculate(self, prompt, max_tokens, k, shared, stops):
        tokens, accepted, drafted = [], 0, 0
        end_id = int(shared["end_id"][0, 0])
        while len(tokens) < max_tokens:
            context = prompt + tokens
            remaining = max_tokens - len(tokens)
            draft = self._generate(self.draft, context, min(k, remaining), shared)[:remaining]
            verified = self._generate(self.target, context, len(draft) + 1, shared, draft)[:remaining]
            if not verified:
                break
            drafted += len(draft)
            accepted += next((i for i, (a, b) in enumerate(zip(draft, verified)) if a != b),
                             min(len(draft), len(verified)))
            tokens, stopped = _stopped(tokens + verified, stops)
            if stopped or end_id in verified:
                break
        return tokens, accepted, drafted
