"""preprocessing (specdeploy): QUERY text -> INPUT_ID tokens, per the inflight_batcher_llm tensor contract."""

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
        self.add_special = _param(args, "add_special_tokens", "true").lower() in ("true", "1")
        self.end_id = self.tokenizer.eos_token_id if self.tokenizer.eos_token_id is not None else 0
        self.pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.end_id

    def execute(self, requests):
        return [self._one(request) for request in requests]

    @staticmethod
    def _ids(request, name):
        tensor = pb_utils.get_input_tensor_by_name(request, name)
        if tensor is None:
            return None
        return tensor.as_numpy().astype(np.int32)

    def _one(self, request):
        queries = pb_utils.get_input_tensor_by_name(request, "QUERY").as_numpy()
        out_len = pb_utils.get_input_tensor_by_name(request, "REQUEST_OUTPUT_LEN").as_numpy().astype(np.int32)
        batch = [self.tokenizer.encode(q.reshape(-1)[0].decode("utf-8"), add_special_tokens=self.add_special)
                 for q in queries]
        width = max(len(ids) for ids in batch)
        input_ids = np.full((len(batch), width), self.pad_id, dtype=np.int32)
        for row, ids in enumerate(batch):
            input_ids[row, :len(ids)] = ids
        lengths = np.array([[len(ids)] for ids in batch], dtype=np.int32)
        end = self._ids(request, "END_ID")
        pad = self._ids(request, "PAD_ID")
        rows = len(batch)
        end = end if end is not None else np.full((rows, 1), self.end_id, dtype=np.int32)
        pad = pad if pad is not None else np.full((rows, 1), self.pad_id, dtype=np.int32)
        return pb_utils.InferenceResponse(output_tensors=[
            pb_utils.Tensor("INPUT_ID", input_ids), pb_utils.Tensor("REQUEST_INPUT_LEN", lengths),
            pb_utils.Tensor("REQUEST_OUTPUT_LEN", out_len), pb_utils.Tensor("OUT_END_ID", end),
            pb_utils.Tensor("OUT_PAD_ID", pad),
            pb_utils.Tensor("STOP_WORDS_IDS", self._word_list(request, "STOP_WORDS_DICT", rows)),
            pb_utils.Tensor("BAD_WORDS_IDS", self._word_list(request, "BAD_WORDS_DICT", rows)),
        ])

    def _word_list(self, request, name, rows):
        """Words -> the backend's `[batch, 2, n]` list: row 0 the words' ids back to back, row 1 the cumulative
        end offsets, both padded (ids with 0, offsets with -1); the same layout as NVIDIA's preprocessing
        (tensorrtllm_backend all_models/inflight_batcher_llm/preprocessing/1/model.py @ c2e65b8)."""
        tensor = pb_utils.get_input_tensor_by_name(request, name)
        words = [] if tensor is None else tensor.as_numpy().reshape(rows, -1)
        lists = []
        for row in range(rows):
            flat, offsets = [], []
            for word in (words[row] if len(words) else ()):
                ids = self.tokenizer.encode(word.decode("utf-8") if isinstance(word, bytes) else str(word),
                                            add_special_tokens=False)
                if ids:
                    flat += ids
                    offsets.append(len(flat))
            lists.append((flat, offsets))
        width = max(1, *(len(flat) for flat, _ in lists))
        out = np.zeros((rows, 2, width), dtype=np.int32)
        out[:, 1, :] = -1
        for row, (flat, offsets) in enumerate(lists):
            out[row, 0, :len(flat)] = flat
            out[row, 1, :len(offsets)] = offsets
        return out
