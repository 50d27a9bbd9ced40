"""Every valid mechanism x backend x TRT-LLM version combination, as inline profiles (catalog models, offline)."""

from __future__ import annotations

from typing import Any

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
EAGLE3 = "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"
SMALL = "meta-llama/Llama-3.2-1B-Instruct"
SCHEDULE = {1: 4, 4: 3, 16: 2}


def _case(model: str, backend: str, version: str, mechanism: str, gpu: str = "h200", **spec: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "target": {"model": model, "dtype": "bfloat16"},
        "hardware": {"gpu": gpu},
        "runtime": {"trtllm_version": version, "backend": backend},
        "speculative": {"mechanism": mechanism, **spec},
        "serving": {"max_batch_size": 32, "max_seq_len": 4096},
    }
    return data


def _mtp(version: str) -> dict[str, Any]:
    data = _case("deepseek-ai/DeepSeek-V3", "pytorch", version, "mtp", draft_len=3)
    data["target"] = {"model": "deepseek-ai/DeepSeek-V3", "quantization": "fp8"}
    data["hardware"] = {"gpu": "h200", "count": 8, "tensor_parallel": 8}
    return data


def _two_model(version: str) -> dict[str, Any]:
    return _case(
        LLAMA,
        "pytorch",
        version,
        "eagle3",
        draft_len=4,
        draft_model=EAGLE3,
        options={"one_model": False},
        schedule=SCHEDULE,
        max_concurrency=24,
    )


PYTORCH: dict[str, dict[str, Any]] = {}
for _v in ("1.2.1", "1.3.0"):
    PYTORCH.update(
        {
            f"pytorch-{_v}-eagle3": _case(LLAMA, "pytorch", _v, "eagle3", draft_len=3, draft_model=EAGLE3),
            f"pytorch-{_v}-eagle3-schedule": _case(
                LLAMA, "pytorch", _v, "eagle3", draft_len=4, draft_model=EAGLE3, schedule=SCHEDULE, max_concurrency=24
            ),
            f"pytorch-{_v}-mtp": _mtp(_v),
            f"pytorch-{_v}-draft_target": _case(LLAMA, "pytorch", _v, "draft_target", draft_len=4, draft_model=SMALL),
            f"pytorch-{_v}-ngram-schedule": _case(LLAMA, "pytorch", _v, "ngram", draft_len=4, schedule=SCHEDULE),
            f"pytorch-{_v}-auto": _case(LLAMA, "pytorch", _v, "auto"),
            f"pytorch-{_v}-none": _case(LLAMA, "pytorch", _v, "none"),
        }
    )
PYTORCH.update(
    {  # the ranges inside the 1.3 line (specdeploy.engines.trtllm.versions.RANGES), and 1.4 (UNKNOWN)
        "pytorch-1.2.1-eagle3-two-model-schedule": _two_model("1.2.1"),
        "pytorch-1.3.0rc2-ngram-schedule": _case(
            LLAMA, "pytorch", "1.3.0rc2", "ngram", draft_len=4, schedule=SCHEDULE, max_concurrency=24
        ),
        "pytorch-1.3.0rc5-draft_target": _case(
            LLAMA, "pytorch", "1.3.0rc5", "draft_target", draft_len=4, draft_model=SMALL
        ),
        "pytorch-1.3.0rc8-draft_target": _case(
            LLAMA, "pytorch", "1.3.0rc8", "draft_target", draft_len=4, draft_model=SMALL
        ),
        "pytorch-1.3.0rc14-mtp": _mtp("1.3.0rc14"),
        "pytorch-1.3.0rc14-ngram-schedule": _case(
            LLAMA, "pytorch", "1.3.0rc14", "ngram", draft_len=4, schedule=SCHEDULE, max_concurrency=24
        ),
        "pytorch-1.3.0rc23-eagle3-two-model-schedule": _two_model("1.3.0rc23"),
        "pytorch-1.3.0rc23-mtp": _mtp("1.3.0rc23"),
        "pytorch-1.4.0rc1-eagle3": _case(LLAMA, "pytorch", "1.4.0rc1", "eagle3", draft_len=3, draft_model=EAGLE3),
        "pytorch-1.3.0-dflash": _case(
            "Qwen/Qwen3-8B",
            "pytorch",
            "1.3.0",
            "dflash",
            gpu="b200",
            draft_len=7,
            draft_model="z-lab/Qwen3-8B-DFlash-b16",
            options={"block_size": 16},
        ),
        # DSpark with the target's own stages (DeepSeek-V4's are not in the offline catalog: Qwen3-8B stands in)
        "pytorch-1.3.0-dspark": _case("Qwen/Qwen3-8B", "pytorch", "1.3.0", "dspark", gpu="b200", draft_len=5),
        "pytorch-1.3.0-pard": _case(LLAMA, "pytorch", "1.3.0", "pard", draft_len=4, draft_model=SMALL),
        "pytorch-1.3.0-sa": _case(LLAMA, "pytorch", "1.3.0", "sa", draft_len=4),
        "pytorch-1.3.0-eagle3-dynamic-tree": _case(
            LLAMA,
            "pytorch",
            "1.3.0",
            "eagle3",
            draft_len=4,
            draft_model=EAGLE3,
            options={"dynamic_tree": True, "dynamic_tree_max_topk": 4},
        ),
    }
)

VICUNA = "lmsys/vicuna-7b-v1.3"
ENGINE: dict[str, dict[str, Any]] = {
    "tensorrt-1.2.1-medusa": _case(
        VICUNA,
        "tensorrt",
        "1.2.1",
        "medusa",
        gpu="l40s",
        draft_len=7,
        draft_model="FasterDecoding/medusa-vicuna-7b-v1.3",
        options={"num_heads": 4, "choices": [[0], [0, 0], [1], [0, 1], [2], [0, 0, 0], [1, 0]]},
    ),
    "tensorrt-1.2.1-medusa-dtype-auto": _case(
        VICUNA,
        "tensorrt",
        "1.2.1",
        "medusa",
        gpu="l40s",
        draft_len=4,
        draft_model="FasterDecoding/medusa-vicuna-7b-v1.3",
        options={"num_heads": 4, "choices": [[0], [1], [0, 0], [2]]},
    ),
    "tensorrt-1.2.1-eagle": _case(
        VICUNA, "tensorrt", "1.2.1", "eagle", draft_len=63, draft_model="yuhuili/EAGLE-Vicuna-7B-v1.3"
    ),
    "tensorrt-1.2.1-redrafter": _case(
        VICUNA, "tensorrt", "1.2.1", "redrafter", draft_len=4, draft_model="apple/ReDrafter-vicuna-7b"
    ),
    "tensorrt-1.2.1-lookahead": _case(
        LLAMA,
        "tensorrt",
        "1.2.1",
        "lookahead",
        draft_len="auto",
        options={"window_size": 4, "ngram_size": 3, "verification_set_size": 4},
    ),
    "tensorrt-1.2.1-draft_target": _case(LLAMA, "tensorrt", "1.2.1", "draft_target", draft_len=4, draft_model=SMALL),
    "tensorrt-1.2.1-none-fp8": {
        **_case(LLAMA, "tensorrt", "1.2.1", "none"),
        "target": {"model": LLAMA, "dtype": "bfloat16", "quantization": "fp8"},
    },
}
for _name, _data in ENGINE.items():
    _data["triton"] = {"layout": "engine"}
    if _data["target"]["model"] == VICUNA:  # 2k context, fp16 checkpoint
        _data["target"]["dtype"] = "auto" if _name.endswith("dtype-auto") else "float16"
        _data["serving"] = {"max_batch_size": 16, "max_seq_len": 2048}
