"""DSpark: a parallel drafter conditioned on the target's hidden states proposes a block per forward (vLLM 0.32).

vLLM 0.32 runs it as `method: dspark` (`vllm/config/speculative.py @ v0.32.0`): a standalone drafter (Qwen3,
Qwen3-Omni, Gemma 4, Kimi K3 DSpark checkpoints), or DeepSeek-V4/V4.1 DSpark stages inside the target checkpoint,
so the drafter is optional. No TensorRT-LLM release has it: `DSparkDecodingConfig` is on TensorRT-LLM's main
branch only; the newest release read, 1.3.0rc27, lists the decoding types MTP, Eagle3, NGram, DraftTarget, PARD,
DFlash and SA (its documentation, `1.3.0rc27/_sources/features/speculative-decoding.md.txt` in NVIDIA/TensorRT-LLM
at commit 7568f40).
"""

from __future__ import annotations

from specdeploy.engines.vllm.declare import VllmMethod
from specdeploy.plugin import Mechanism, Unsupported
from specdeploy_mechanisms._common import options

NO_TRTLLM = Unsupported(
    "no TensorRT-LLM release has DSpark: DSparkDecodingConfig is on its main branch only (1.3.0rc27, the newest "
    "release read, has MTP, Eagle3, NGram, DraftTarget, PARD, DFlash and SA)",
    "serve DSpark with vLLM (runtime.backend: vllm)")


class Dspark(Mechanism):
    name = "dspark"
    summary = "parallel block drafter on the target's hidden states (DeepSeek V4, Qwen3 drafters); vLLM 0.32 only"
    Options = options("DsparkOptions")
    chain = False
    engines = {
        "vllm": VllmMethod(
            "dspark", "optional", fields={"draft_topk": "dspark_draft_topk", "adaptive_verification":
                                          "enable_adaptive_verification"},
            note="a standalone DSpark drafter (Qwen3, Qwen3-Omni, Gemma 4, Kimi K3), or DeepSeek-V4/V4.1 stages "
                 "inside the target checkpoint"),
        "pytorch": NO_TRTLLM,
        "tensorrt": NO_TRTLLM,
    }
    max_draft_len = 64
    default_draft_len = 7
