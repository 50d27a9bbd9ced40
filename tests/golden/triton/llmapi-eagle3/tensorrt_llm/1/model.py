"""LLM API model (specdeploy): model.yaml -> tensorrt_llm.LLM, one response per request or a token stream.

The documented contract of NVIDIA's llmapi model: every top-level key of model.yaml except `triton_config`
goes through `update_llm_args_with_extra_dict` into `LLM()`; `triton_config` sets decoupled/max_batch_size in
auto-complete (config.pbtxt carries the same values, so --disable-auto-complete-config changes nothing).
"""

import asyncio
import os

import numpy as np
import triton_python_backend_utils as pb_utils

from helpers import first, load_model_yaml, sampling_kwargs

_HERE = os.path.dirname(os.path.abspath(__file__))


class TritonPythonModel:
    @staticmethod
    def auto_complete_config(auto_complete_model_config):
        _, triton_config = load_model_yaml(_HERE)
        auto_complete_model_config.set_model_transaction_policy({"decoupled": bool(triton_config["decoupled"])})
        auto_complete_model_config.set_max_batch_size(int(triton_config.get("max_batch_size", 0)))
        return auto_complete_model_config

    def initialize(self, args):
        from tensorrt_llm import LLM
        from tensorrt_llm.llmapi.llm_utils import update_llm_args_with_extra_dict

        llm_config, triton_config = load_model_yaml(_HERE)
        self.decoupled = bool(triton_config["decoupled"])
        self.llm = LLM(**update_llm_args_with_extra_dict({}, llm_config))
        self.loop = asyncio.new_event_loop()

    def execute(self, requests):
        responses = []
        for request in requests:
            try:
                response = self._one(request)
            except Exception as exc:  # an error response, never a crashed model
                response = pb_utils.InferenceResponse(error=pb_utils.TritonError(str(exc)))
                if self.decoupled:
                    request.get_response_sender().send(
                        response, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
                    continue
            if not self.decoupled:
                responses.append(response)
        return None if self.decoupled else responses

    def _one(self, request):
        from tensorrt_llm import SamplingParams

        prompt = first(pb_utils, request, "text_input")
        params = SamplingParams(**sampling_kwargs(pb_utils, request))
        streaming = bool(first(pb_utils, request, "streaming"))
        if streaming and not self.decoupled:
            raise ValueError("streaming needs decoupled: true in config.pbtxt and model.yaml")
        if not self.decoupled:
            return self._response(self.llm.generate(prompt, params))
        sender = request.get_response_sender()
        self.loop.run_until_complete(self._stream(sender, prompt, params, streaming))
        return None

    async def _stream(self, sender, prompt, params, streaming):
        last = None
        async for output in self.llm.generate_async(prompt, params, streaming=streaming):
            last = output
            if streaming:
                sender.send(self._response(output, delta=True))
        if not streaming:
            sender.send(self._response(last))
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)

    @staticmethod
    def _response(result, delta=False):
        completion = result.outputs[0]
        text = completion.text_diff if delta else completion.text
        metrics = getattr(completion, "request_perf_metrics", None)
        spec = getattr(metrics, "speculative_decoding", None)
        tensors = [
            pb_utils.Tensor("text_output", np.array([text.encode("utf-8")], dtype=object)),
            pb_utils.Tensor("finish_reason", np.array([str(completion.finish_reason or "").encode()], dtype=object)),
            pb_utils.Tensor("acceptance_rate", np.array([getattr(spec, "acceptance_rate", 0.0)], dtype=np.float32)),
            pb_utils.Tensor("total_accepted_draft_tokens",
                            np.array([getattr(spec, "total_accepted_draft_tokens", 0)], dtype=np.int32)),
            pb_utils.Tensor("total_draft_tokens", np.array([getattr(spec, "total_draft_tokens", 0)], dtype=np.int32)),
        ]
        return pb_utils.InferenceResponse(output_tensors=tensors)

    def finalize(self):
        llm = getattr(self, "llm", None)
        if llm is not None:
            llm.shutdown()
