"""Reference model (specdeploy): the CPU reference runtime answering Triton requests.

Runtime contract (specdeploy.runtime), the same call `specdeploy generate` makes:
    pair = load_pair(target_ref, drafter_ref or None, device)
    result = generate_text(pair, prompt, max_new_tokens=N, mechanism=M, draft_len=K, chat=True)
    result.text, result.tokens, result.stats (RunStats: tokens_per_s, acceptance_rate)

The draft length is the tuned one (parameter `draft_len`, 0 = speculation off); a request may set its own
(input `draft_len`, 0..MAX_DRAFT_LEN) to A/B speculation on the live server. Greedy output is the same either way.

A bad request is answered INVALID_ARG (error codes: triton-inference-server/python_backend README.md, "Error
Codes", `pb_utils.TritonError(message, code)`; the bundled 2.51 stub has them) and the model keeps serving:
a missing input is named; a prompt over MAX_BYTES_PER_TOKEN bytes per allowed token is refused before it is
tokenized (a 30 MB prompt held the only instance for 28 s); prompt + max_tokens must fit `max_seq_len`.
"""

import json
import site

import numpy as np
import triton_python_backend_utils as pb_utils

MAX_BYTES_PER_TOKEN = 16  # a cheap bound checked before tokenizing; the token count is checked after


class BadRequest(ValueError):
    """The request, not the model, is wrong: INVALID_ARG."""


class TritonPythonModel:
    def initialize(self, args):
        params = {k: v["string_value"] for k, v in json.loads(args["model_config"]).get("parameters", {}).items()}
        if params.get("site_packages"):
            site.addsitedir(params["site_packages"])  # the stub ignores the venv: add it (and its .pth files)
        from specdeploy.runtime import MAX_DRAFT_LEN, generate_text, load_pair

        self.generate_text, self.max_draft_len = generate_text, MAX_DRAFT_LEN
        self.pair = load_pair(params["target_ref"], params.get("drafter_ref") or None, params.get("device") or "cpu")
        self.mechanism = params.get("mechanism") or "none"
        self.draft_len = int(params.get("draft_len") or 0)
        self.default_max_tokens = int(params.get("default_max_tokens") or 64)
        self.max_seq_len = int(params.get("max_seq_len") or 0)

    def execute(self, requests):
        responses = []
        for request in requests:
            try:
                responses.append(self._one(request))
            except Exception as exc:  # one failed request, not a crashed model
                bad = isinstance(exc, ValueError) or getattr(exc, "exit_code", None) == 2  # specdeploy UsageError
                code = pb_utils.TritonError.INVALID_ARG if bad else pb_utils.TritonError.INTERNAL
                responses.append(pb_utils.InferenceResponse(error=pb_utils.TritonError(str(exc), code)))
        return responses

    def _one(self, request):
        text = pb_utils.get_input_tensor_by_name(request, "text_input")
        if text is None:
            raise BadRequest("the request has no 'text_input' (the prompt, TYPE_STRING)")
        prompt = text.as_numpy().reshape(-1)[0]
        prompt = prompt if isinstance(prompt, bytes) else str(prompt).encode("utf-8")
        if self.max_seq_len and len(prompt) > self.max_seq_len * MAX_BYTES_PER_TOKEN:
            raise BadRequest(f"the prompt has {len(prompt)} bytes: more than max_seq_len {self.max_seq_len} tokens "
                             f"can hold (at most {self.max_seq_len * MAX_BYTES_PER_TOKEN} bytes)")
        limit = pb_utils.get_input_tensor_by_name(request, "max_tokens")
        max_tokens = int(limit.as_numpy().reshape(-1)[0]) if limit is not None else self.default_max_tokens
        k = self._draft_len(pb_utils.get_input_tensor_by_name(request, "draft_len"))
        mechanism = self.mechanism if k > 0 else "none"
        result = self.generate_text(self.pair, prompt.decode("utf-8"), max_tokens, mechanism=mechanism,
                                    draft_len=max(k, 1), chat=True, max_seq_len=self.max_seq_len or None)
        return pb_utils.InferenceResponse(output_tensors=[
            pb_utils.Tensor("text_output", np.array([result.text.encode("utf-8")], dtype=object)),
            pb_utils.Tensor("output_ids", np.array(result.tokens, dtype=np.int32)),
            pb_utils.Tensor("tokens_per_s", np.array([result.stats.tokens_per_s], dtype=np.float32)),
            pb_utils.Tensor("acceptance_rate", np.array([result.stats.acceptance_rate], dtype=np.float32)),
            pb_utils.Tensor("draft_len", np.array([k], dtype=np.int32)),
        ])

    def _draft_len(self, tensor):
        """The request's own draft length when it sends one, else the tuned one."""
        if tensor is None:
            return self.draft_len
        k = int(tensor.as_numpy().reshape(-1)[0])
        if not 0 <= k <= self.max_draft_len:
            raise BadRequest(f"draft_len must be between 0 and {self.max_draft_len}, got {k}")
        if k > 0 and self.mechanism == "none":
            raise BadRequest("this model serves no drafter (mechanism none): only draft_len 0 is possible")
        return k
