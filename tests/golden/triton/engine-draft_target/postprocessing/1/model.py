"""postprocessing (specdeploy): TOKENS_BATCH [batch, beam, len] + SEQUENCE_LENGTH [batch, beam] -> OUTPUT text."""

import json
import site

import numpy as np
import triton_python_backend_utils as pb_utils

_PLACEHOLDER = "$" "{"  # a fill_template placeholder left unfilled counts as unset


def _param(args, key, default=""):
    value = json.loads(args["model_config"]).get("parameters", {}).get(key, {}).get("string_value", default)
    return default if _PLACEHOLDER in value else value


class TritonPythonModel:
    def initialize(self, args):
        if _param(args, "site_packages"):
            site.addsitedir(_param(args, "site_packages"))  # a venv outside the stub's own Python
        from transformers import AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(_param(args, "tokenizer_dir"))
        self.skip_special = _param(args, "skip_special_tokens", "true").lower() in ("true", "1")

    def execute(self, requests):
        responses = []
        for request in requests:
            tokens = pb_utils.get_input_tensor_by_name(request, "TOKENS_BATCH").as_numpy()
            lengths = pb_utils.get_input_tensor_by_name(request, "SEQUENCE_LENGTH").as_numpy()
            texts = [[self.tokenizer.decode(tokens[b, k, :lengths[b, k]].tolist(),
                                            skip_special_tokens=self.skip_special).encode("utf-8")
                      for k in range(tokens.shape[1])] for b in range(tokens.shape[0])]
            responses.append(pb_utils.InferenceResponse(
                output_tensors=[pb_utils.Tensor("OUTPUT", np.array(texts, dtype=object))]))
        return responses
