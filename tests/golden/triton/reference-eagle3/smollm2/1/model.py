"""Reference model (specdeploy): the CPU reference runtime answering Triton requests.

Runtime contract (specdeploy.runtime), the same call `specdeploy generate` makes:
    pair = load_pair(target_ref, drafter_ref or None, device)
    result = generate_text(pair, prompt, max_new_tokens=N, mechanism=M, draft_len=K, chat=True)
    result.text, result.tokens, result.stats (RunStats: tokens_per_s, acceptance_rate)
"""

import json
import site

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        params = {k: v["string_value"] for k, v in json.loads(args["model_config"]).get("parameters", {}).items()}
        if params.get("site_packages"):
            site.addsitedir(params["site_packages"])  # the stub ignores the venv: add it (and its .pth files)
        from specdeploy.runtime import generate_text, load_pair

        self.generate_text = generate_text
        self.pair = load_pair(params["target_ref"], params.get("drafter_ref") or None, params.get("device") or "cpu")
        self.options = {"mechanism": params.get("mechanism", "none"), "draft_len": int(params.get("draft_len") or 0)}
        self.default_max_tokens = int(params.get("default_max_tokens") or 64)

    def execute(self, requests):
        responses = []
        for request in requests:
            try:
                responses.append(self._one(request))
            except Exception as exc:  # one failed request, not a crashed model
                responses.append(pb_utils.InferenceResponse(error=pb_utils.TritonError(str(exc))))
        return responses

    def _one(self, request):
        prompt = pb_utils.get_input_tensor_by_name(request, "text_input").as_numpy().reshape(-1)[0]
        limit = pb_utils.get_input_tensor_by_name(request, "max_tokens")
        max_tokens = int(limit.as_numpy().reshape(-1)[0]) if limit is not None else self.default_max_tokens
        result = self.generate_text(self.pair, prompt.decode("utf-8"), max_tokens, chat=True, **self.options)
        return pb_utils.InferenceResponse(output_tensors=[
            pb_utils.Tensor("text_output", np.array([result.text.encode("utf-8")], dtype=object)),
            pb_utils.Tensor("output_ids", np.array(result.tokens, dtype=np.int32)),
            pb_utils.Tensor("tokens_per_s", np.array([result.stats.tokens_per_s], dtype=np.float32)),
            pb_utils.Tensor("acceptance_rate", np.array([result.stats.acceptance_rate], dtype=np.float32)),
        ])
