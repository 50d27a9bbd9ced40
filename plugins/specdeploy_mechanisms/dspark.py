"""DSpark: a parallel drafter conditioned on the target's hidden states proposes a block per forward, refined by a
light sequential head (vLLM 0.32; TensorRT-LLM's PyTorch backend from 1.3.0rc23).

vLLM 0.32 runs it as `method: dspark` (`vllm/config/speculative.py @ v0.32.0`): a standalone drafter (Qwen3,
Qwen3-Omni, Gemma 4, Kimi K3 DSpark checkpoints), or DeepSeek-V4/V4.1 DSpark stages inside the target checkpoint,
so the drafter is optional. TensorRT-LLM has `DSparkDecodingConfig` (`decoding_type: DSpark`, PyTorch backend only)
in 1.3.0rc22 and rc23, not in rc20 (its rendered `llm_args` source, P20/P22/P23 in
`specdeploy/engines/trtllm/versions.py`); rc21 was not read, so specdeploy emits it from rc23
(`UNCONFIRMED["1.3.dspark_since"]`). Its fields (mask token, captured layers, block size, Markov head) default to
the drafter's config, so only `max_draft_len` is emitted: the target's own DSpark stages draft (validate's drafter
rule refuses a `draft_model` for a mechanism that does not need one, standalone DSpark drafters included).
"""

from __future__ import annotations

from typing import Any

from specdeploy.engines.trtllm.declare import TrtllmDecoding
from specdeploy.engines.vllm.declare import VllmMethod
from specdeploy.issues import Issue
from specdeploy.plugin import Mechanism, Unsupported
from specdeploy_mechanisms._common import options

TRTLLM_FIELDS = "mask_token_id, target_layer_ids, block_size, markov_rank, markov_head_type"
"""DSparkDecodingConfig's own fields at 1.3.0rc23 (P23): none of them is one of vLLM's DSpark options."""


def _vllm_only(opts: Any, _line: Any) -> Issue | None:
    """vLLM's DSpark options have no TensorRT-LLM field: refused there rather than dropped."""
    for name, unset in (("draft_topk", None), ("adaptive_verification", False)):
        if getattr(opts, name, unset) != unset:
            return Issue(
                ("speculative", "options", name),
                f"{name} is a vLLM DSpark option: TensorRT-LLM's "
                f"DSparkDecodingConfig has no such field (it has {TRTLLM_FIELDS}; 1.3.0rc23)",
                f"drop options.{name}, or serve with vLLM (runtime.backend: vllm)",
            )
    return None


class Dspark(Mechanism):
    name = "dspark"
    summary = (
        "parallel block drafter on the target's hidden states (DeepSeek V4, Qwen3 drafters); vLLM 0.32, "
        "TRT-LLM 1.3 line from 1.3.0rc23"
    )
    Options = options("DsparkOptions")
    chain = False
    engines = {
        "vllm": VllmMethod(
            "dspark",
            "optional",
            fields={"draft_topk": "dspark_draft_topk", "adaptive_verification": "enable_adaptive_verification"},
            note="a standalone DSpark drafter (Qwen3, Qwen3-Omni, Gemma 4, Kimi K3), or DeepSeek-V4/V4.1 stages "
            "inside the target checkpoint",
        ),
        "pytorch": TrtllmDecoding(
            decoding_type={"1.3": "DSpark"},
            since={"1.3": "1.3.0rc23"},
            refuse=_vllm_only,
            unconfirmed=("1.3.dspark_since",),
            sources={
                "decoding_type": "Literal['DSpark'] in P22, P23 (absent from P20)",
                "backends": "P23 DSparkDecodingConfig.supports_backend: pytorch",
            },
        ),
        "tensorrt": Unsupported(
            "TensorRT-LLM engines (trtllm-build) have no DSpark: DSparkDecodingConfig supports the PyTorch backend "
            "only (1.3.0rc23), and the engine backend ends with 1.2.x",
            "use runtime.backend: pytorch with runtime.trtllm_version 1.3.0rc23 or later, or runtime.backend: vllm",
        ),
    }
    max_draft_len = 64
    default_draft_len = 7
