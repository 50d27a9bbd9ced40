"""LLM API model (specdeploy): model.yaml -> tensorrt_llm.LLM; requests run concurrently, decoupled or not.

The protocol is NVIDIA's llmapi model's, transcribed (not copied) from
triton-inference-server/tensorrtllm_backend `all_models/llmapi/tensorrt_llm/1/model.py` @ c2e65b8 and
NVIDIA/TensorRT-LLM `triton_backend/all_models/llmapi/tensorrt_llm/1/model.py` @ 044a90d:
- every top-level key of model.yaml except `triton_config` goes through `update_llm_args_with_extra_dict`
  into `LLM()` (`model` is required there);
- with instance_group count > 1, instance i sees only the GPUs of group i of the `gpu_device_ids` parameter
  (`0,1;2,3`): CUDA_VISIBLE_DEVICES is set before tensorrt_llm is imported;
- the LLM lives on a background asyncio event loop; `execute` hands each request to it
  (`run_coroutine_threadsafe`) and returns at once, so the LLM batches the requests in flight;
- every response (one, or a stream) goes through the request's response sender, decoupled or not;
- every `triton_config.cancellation_check_period_ms` a thread aborts the requests Triton cancelled.
"""

import asyncio
import json
import os
import queue
import re
import threading
import time

import numpy as np
import triton_python_backend_utils as pb_utils
from helpers import first, load_model_yaml, sampling_kwargs

_HERE = os.path.dirname(os.path.abspath(__file__))
_FINAL = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL


def instance_gpus(model_config, instance_name):
    """The GPUs of this instance (`None`: one instance, it sees every GPU); refused when there is no group."""
    count = sum(int(g.get("count", 1)) for g in model_config.get("instance_group", [])) or 1
    if count <= 1:
        return None
    ids = model_config.get("parameters", {}).get("gpu_device_ids", {}).get("string_value", "")
    groups = [g.strip() for g in ids.split(";") if g.strip()]
    match = re.search(r"_(\d+)$", instance_name or "")
    index = int(match.group(1)) if match else 0
    if index >= len(groups):
        raise pb_utils.TritonModelException(f"instance {index} of {count} has no GPU group in gpu_device_ids "
                                            f"'{ids}' (one ';'-separated group per instance)")
    return groups[index]


class TritonPythonModel:
    @staticmethod
    def auto_complete_config(auto_complete_model_config):
        _, triton_config = load_model_yaml(_HERE)
        auto_complete_model_config.set_model_transaction_policy({"decoupled": bool(triton_config["decoupled"])})
        auto_complete_model_config.set_max_batch_size(int(triton_config.get("max_batch_size", 0)))
        return auto_complete_model_config

    def initialize(self, args):
        gpus = instance_gpus(json.loads(args["model_config"]), args.get("model_instance_name", ""))
        if gpus is not None:  # before tensorrt_llm (and CUDA) is imported
            os.environ["CUDA_VISIBLE_DEVICES"] = gpus
            os.environ["TRTLLM_VISIBLE_DEVICES"] = gpus
        from tensorrt_llm import LLM, SamplingParams
        from tensorrt_llm.llmapi.llm_utils import update_llm_args_with_extra_dict

        llm_config, triton_config = load_model_yaml(_HERE)
        self.decoupled = bool(triton_config["decoupled"])
        self.sampling_params = SamplingParams
        self.period_s = int(triton_config.get("cancellation_check_period_ms", 100)) / 1000.0
        self.pending = {}  # id(request) -> (request, generation) while the LLM works on it
        self.lock = threading.Lock()
        self.running = True
        self.responses = queue.Queue()  # (sender, response, flags) sent in order off the event loop
        self.llm = None
        ready = threading.Event()
        self.thread = threading.Thread(target=asyncio.run, args=(self._engine(llm_config, LLM,
                                                                               update_llm_args_with_extra_dict,
                                                                               ready),), daemon=True)
        self.thread.start()
        ready.wait()
        if isinstance(self.llm, BaseException):  # LLM() refused its arguments: the load fails with its reason
            self.thread.join()
            raise self.llm
        self.workers = [threading.Thread(target=self._send_loop, daemon=True),
                        threading.Thread(target=self._cancel_loop, daemon=True)]
        for worker in self.workers:
            worker.start()

    async def _engine(self, llm_config, llm_class, merge, ready):
        """The event loop's life: build the LLM, serve until finalize, drain, shut the LLM down."""
        self.loop = asyncio.get_running_loop()
        self.stopping = asyncio.Event()
        try:
            self.llm = await self.loop.run_in_executor(None, lambda: llm_class(**merge({}, llm_config)))
        except BaseException as exc:  # noqa: BLE001 - handed to initialize, which raises it
            self.llm = exc
            ready.set()
            return
        ready.set()
        await self.stopping.wait()
        while self.pending:
            await asyncio.sleep(0.05)
        await self.loop.run_in_executor(None, self.llm.shutdown)

    def execute(self, requests):
        for request in requests:
            asyncio.run_coroutine_threadsafe(self._serve(request), self.loop)
        return None

    async def _serve(self, request):
        sender = request.get_response_sender()
        key = id(request)
        try:
            prompt = first(pb_utils, request, "text_input")
            if prompt is None:
                raise ValueError("text_input is missing from the request")
            streaming = bool(first(pb_utils, request, "streaming"))
            if streaming and not self.decoupled:
                raise ValueError("streaming needs decoupled: true in config.pbtxt and model.yaml")
            params = self.sampling_params(**sampling_kwargs(pb_utils, request))
            generation = self.llm.generate_async(prompt, params, streaming=streaming)
            with self.lock:
                self.pending[key] = (request, generation)
            last = None
            async for output in generation:
                last = output
                if streaming and (self._take(key) if output.finished else self._still_pending(key)):
                    self.responses.put((sender, self._response(output, delta=True), _FINAL if output.finished else 0))
            if self._take(key):  # not answered yet (by a finished stream or by the cancellation loop)
                self.responses.put((sender, self._response(last) if last is not None and not streaming else None,
                                    _FINAL))
        except Exception as exc:  # an error response for this request, the model stays up
            with self.lock:
                self.pending.pop(key, None)
            self.responses.put((sender, pb_utils.InferenceResponse(error=pb_utils.TritonError(str(exc))), _FINAL))

    def _still_pending(self, key):
        with self.lock:
            return key in self.pending

    def _take(self, key):
        """Remove a request from the pending ones; True when this caller is the one to send its final response."""
        with self.lock:
            return self.pending.pop(key, None) is not None

    def _send_loop(self):
        while True:
            item = self.responses.get()
            if item is None:
                return
            sender, response, flags = item
            try:
                if response is None:
                    sender.send(flags=flags)
                else:
                    sender.send(response, flags=flags)
            except Exception as exc:  # noqa: BLE001 - a client gone away must not stop the others
                pb_utils.Logger.log_error(f"sending a response failed: {exc}")

    def _cancel_loop(self):
        cancelled_code = getattr(pb_utils.TritonError, "CANCELLED", None)
        while self.running:
            time.sleep(self.period_s)
            with self.lock:
                gone = [(k, r, g) for k, (r, g) in self.pending.items() if r.is_cancelled()]
                for key, _, _ in gone:
                    del self.pending[key]
            for _, request, generation in gone:
                generation.abort()
                error = (pb_utils.TritonError("Request cancelled by client", cancelled_code)
                         if cancelled_code is not None else pb_utils.TritonError("Request cancelled by client"))
                self.responses.put((request.get_response_sender(), pb_utils.InferenceResponse(error=error),
                                    _FINAL))

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
        self.running = False
        loop = getattr(self, "loop", None)
        if loop is not None and not isinstance(self.llm, BaseException):
            loop.call_soon_threadsafe(self.stopping.set)
            self.thread.join()
        if hasattr(self, "responses"):
            self.responses.put(None)
        for worker in getattr(self, "workers", ()):
            worker.join()
