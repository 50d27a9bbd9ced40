"""Helpers of the llmapi model (specdeploy): model.yaml reading and request tensors -> SamplingParams."""

import os

import numpy as np

_SAMPLING = {
    "sampling_param_max_tokens": ("max_tokens", int),
    "sampling_param_temperature": ("temperature", float),
    "sampling_param_top_k": ("top_k", int),
    "sampling_param_top_p": ("top_p", float),
    "sampling_param_seed": ("seed", int),
    "sampling_param_exclude_input_from_output": ("exclude_input_from_output", bool),
    "sampling_param_return_perf_metrics": ("return_perf_metrics", bool),
}


def load_model_yaml(model_dir):
    """model.yaml next to this file, or $LLM_CONFIG_PATH; `triton_config` is split off (it is not an LLM arg)."""
    import yaml  # imported here so a server without PyYAML reports the model's real first problem

    path = os.environ.get("LLM_CONFIG_PATH") or os.path.join(model_dir, "model.yaml")
    with open(path, encoding="utf-8") as handle:
        config = yaml.safe_load(handle) or {}
    triton_config = config.pop("triton_config")  # required, as in NVIDIA's model: a missing block is an error
    if isinstance(config.get("model"), str) and "${HF_HUB_CACHE}" in config["model"]:
        # a snapshot in this host's Hugging Face cache, defaulted as huggingface_hub does (and serve.sh)
        hub = os.environ.get("HF_HUB_CACHE") or os.path.join(
            os.environ.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "huggingface"), "hub")
        config["model"] = config["model"].replace("${HF_HUB_CACHE}", hub)
    return config, triton_config


def first(pb_utils, request, name):
    """The first element of an optional input, or None when the request does not carry it."""
    tensor = pb_utils.get_input_tensor_by_name(request, name)
    if tensor is None:
        return None
    value = np.asarray(tensor.as_numpy()).reshape(-1)[0]
    return value.decode("utf-8") if isinstance(value, bytes) else value.item() if hasattr(value, "item") else value


def sampling_kwargs(pb_utils, request):
    """SamplingParams keyword arguments from the `sampling_param_*` inputs present in the request."""
    kwargs = {}
    for name, (key, cast) in _SAMPLING.items():
        value = first(pb_utils, request, name)
        if value is not None:
            kwargs[key] = cast(value)
    stop = pb_utils.get_input_tensor_by_name(request, "sampling_param_stop")
    if stop is not None:  # dims [-1]: every string of the tensor is a stop string
        words = [w.decode("utf-8") if isinstance(w, bytes) else str(w) for w in stop.as_numpy().reshape(-1)]
        if any(words):
            kwargs["stop"] = [w for w in words if w]
    return kwargs
