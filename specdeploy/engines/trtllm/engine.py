"""Engine backend (TensorRT-LLM <= 1.2.x): convert_checkpoint -> quantize -> trtllm-build, as argv steps.

The argv carries `${...}` placeholders filled at run time (see specdeploy.execute.workdir); outputs
land in `checkpoints/<step-id>-<key[:12]>/` and `engines/<step-id>-<key[:12]>/` (docs/design/trtllm.md §6).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from specdeploy.engines.trtllm.commands import BENCH_DATASET
from specdeploy.engines.trtllm.declare import build_of
from specdeploy.errors import UsageError
from specdeploy.plan.model import Stage, Step
from specdeploy.resolve.resolved import Resolved

if TYPE_CHECKING:
    from specdeploy.profile.schema import Profile

FAMILIES = {"llama": "llama", "mistral": "llama", "qwen2": "qwen", "qwen3": "qwen"}
"""model_type -> examples/models/core/<folder> holding its convert_checkpoint.py."""
QFORMATS = {"fp8": "fp8", "nvfp4": "nvfp4", "int4_awq": "int4_awq", "w4a8_awq": "w4a8_awq", "int8_sq": "int8_sq"}
PY, EX = "${python}", "${trtllm_examples}"
BUILD_NEEDS = ("tensorrt_llm", "gpu")


def _family(resolved: Resolved, role: str) -> str:
    spec = resolved.target if role == "target" else resolved.draft
    model_type = spec.model_type if spec else "llama"
    if model_type not in FAMILIES:
        raise UsageError(
            f"no TensorRT-LLM engine converter known for {role} model_type '{model_type}'",
            hint=f"engine families: {', '.join(sorted(FAMILIES))}; or use backend: pytorch",
        )
    return FAMILIES[model_type]


SPEC_DTYPES = ("float32", "bfloat16", "float16")
"""`--dtype` choices of the Medusa / EAGLE / ReDrafter converters: no `auto` (tables/trtllm-1.2.1.json)."""


def _dtype(resolved: Resolved, auto_ok: bool) -> str:
    """The profile's dtype; where the converter has no `auto`, the target config's dtype."""
    dtype = resolved.profile.target.dtype
    if dtype != "auto" or auto_ok:
        return str(dtype)
    if resolved.target is None or resolved.target.dtype not in SPEC_DTYPES:
        raise UsageError(
            f"this converter needs an explicit --dtype ({', '.join(SPEC_DTYPES)}) and the target's "
            "config.json dtype could not be read",
            hint="set target.dtype in the profile",
        )
    return resolved.target.dtype


def _common(resolved: Resolved, *, auto_ok: bool = True, pp: bool = True) -> list[str]:
    hw = resolved.profile.hardware
    argv = ["--output_dir", "${out}", "--dtype", _dtype(resolved, auto_ok), "--tp_size", str(hw.tensor_parallel)]
    return argv + (["--pp_size", str(hw.pipeline_parallel)] if pp else [])


def quantized_by_modelopt(profile: Profile) -> bool:
    """The target goes through Model-Optimizer's quantize.py (engine backend, a quantization, a plain target)."""
    if profile.runtime.backend != "tensorrt" or profile.target.quantization == "none":
        return False
    declared = build_of(profile.speculative.mechanism)
    return profile.speculative.mechanism == "none" or (declared is not None and declared.modelopt)


def fp8_kv_cache(profile: Profile) -> bool:
    """Whether the emitted commands ask for an FP8 KV cache: only quantize.py's `--kv_cache_dtype fp8` (engine
    backend, fp8) does; the PyTorch backend's YAML never sets kv_cache_config.dtype (the checkpoint's stays)."""
    return quantized_by_modelopt(profile) and profile.target.quantization == "fp8"


def convert_argv(resolved: Resolved, role: str = "target") -> list[str]:
    """The checkpoint conversion (or Model-Optimizer quantization) command of one model."""
    profile = resolved.profile
    declared = build_of(profile.speculative.mechanism)
    model = f"${{fetch.{role}.path}}"
    if role == "target" and declared is not None and declared.convert is not None:  # the drafter folded in
        script, args = declared.convert
        return [PY, f"{EX}/{script}", "--model_dir", model, *args(resolved), *_common(resolved, auto_ok=False)]
    if role == "target" and quantized_by_modelopt(profile):
        argv = [
            PY,
            f"{EX}/quantization/quantize.py",
            "--model_dir",
            model,
            "--qformat",
            QFORMATS[profile.target.quantization],
            *_common(resolved),
        ]
        return argv + (["--kv_cache_dtype", "fp8"] if fp8_kv_cache(profile) else [])
    return [
        PY,
        f"{EX}/models/core/{_family(resolved, role)}/convert_checkpoint.py",
        "--model_dir",
        model,
        *_common(resolved),
    ]


def attach_argv(resolved: Resolved, script: str, args: list[str]) -> list[str]:
    """Attach the drafter to the converted base (ReDrafter): such a converter has no --pp_size (pipeline fixed at
    1; pp != 1 is refused by the mechanism's check) and takes the base and the drafter folders."""
    return [
        PY,
        f"{EX}/{script}",
        "--base_model_checkpoint_dir",
        "${convert.base.dir}",
        "--drafter_model_dir",
        "${fetch.draft.path}",
        *args,
        *_common(resolved, auto_ok=False, pp=False),
    ]


def engine_draft_len(resolved: Resolved) -> int:
    """The target engine's max_draft_len: what the mechanism's checkpoint makes `trtllm-build` set, else K."""
    declared = build_of(resolved.profile.speculative.mechanism)
    if declared is None or declared.engine_draft_len is None:
        return resolved.draft_len
    return declared.engine_draft_len(resolved)


def build_argv(resolved: Resolved, checkpoint_step: str, role: str = "target") -> list[str]:
    """`trtllm-build` for one engine: limits, plugins, workers, and the speculative mode of the target."""
    profile = resolved.profile
    serving, hw = profile.serving, profile.hardware
    argv = [
        "trtllm-build",
        "--checkpoint_dir",
        f"${{{checkpoint_step}.dir}}",
        "--output_dir",
        "${out}",
        "--max_batch_size",
        str(serving.max_batch_size),
        "--max_input_len",
        str(serving.max_input_len or serving.max_seq_len - 1),
        "--max_seq_len",
        str(serving.max_seq_len),
        "--max_num_tokens",
        str(resolved.max_num_tokens),
        "--kv_cache_type",
        "paged",
        "--gemm_plugin",
        "auto",
        "--gpt_attention_plugin",
        "auto",
        "--remove_input_padding",
        "enable",
        "--use_paged_context_fmha",
        "enable",
        "--workers",
        str(hw.tensor_parallel * hw.pipeline_parallel),
    ]
    declared = build_of(profile.speculative.mechanism)
    mode = declared.mode if declared is not None else None
    if role == "draft":
        return argv + ["--gather_generation_logits"]
    if mode:
        k = engine_draft_len(resolved)  # trtllm-build raises max_num_tokens to max_batch_size * (k + 1)
        argv[argv.index("--max_num_tokens") + 1] = str(max(resolved.max_num_tokens, serving.max_batch_size * (k + 1)))
        argv += ["--speculative_decoding_mode", mode, "--max_draft_len", str(k)]
    return argv


def _step(
    step_id: str,
    stage: Stage,
    what: str,
    argv: list[str],
    after: tuple[str, ...],
    out: str,
    needs: tuple[str, ...],
    **params: Any,
) -> Step:
    return Step(step_id, stage, what, depends_on=after, argv=tuple(argv), params={"out": out, **params}, needs=needs)


def engine_steps(resolved: Resolved, after: tuple[str, ...]) -> list[Step]:
    """convert/quantize -> trtllm-build per model (draft-target: two engines), then serve.sh."""
    profile = resolved.profile
    declared = build_of(profile.speculative.mechanism)
    steps: list[Step] = []
    target_ckpt = "convert.target"
    if declared is not None and declared.attach is not None:
        what, script, args = declared.attach
        steps.append(
            _step(
                "convert.base",
                Stage.CONVERT,
                f"convert the base model for {what}",
                convert_argv(resolved),
                after,
                "checkpoints",
                ("tensorrt_llm",),
            )
        )
        steps.append(
            _step(
                "convert.target",
                Stage.CONVERT,
                f"attach the {what} drafter",
                attach_argv(resolved, script, args(resolved)),
                ("convert.base", *after),
                "checkpoints",
                ("tensorrt_llm",),
            )
        )
    elif convert_argv(resolved)[1].endswith("quantize.py"):
        target_ckpt = "quantize.target"
        steps.append(
            _step(
                target_ckpt,
                Stage.QUANTIZE,
                f"quantize the target ({profile.target.quantization}, Model-Optimizer)",
                convert_argv(resolved),
                after,
                "checkpoints",
                BUILD_NEEDS,
            )
        )
    else:
        steps.append(
            _step(
                "convert.target",
                Stage.CONVERT,
                "convert the target checkpoint",
                convert_argv(resolved),
                after,
                "checkpoints",
                ("tensorrt_llm",),
            )
        )
    steps.append(
        _step(
            "engine.target",
            Stage.ENGINE,
            "build the target engine (trtllm-build)",
            build_argv(resolved, target_ckpt),
            (target_ckpt,),
            "engines",
            BUILD_NEEDS,
            max_draft_len=engine_draft_len(resolved),
        )
    )
    engines: tuple[str, ...] = ("engine.target",)
    if declared is not None and declared.draft_engine:
        steps.append(
            _step(
                "convert.draft",
                Stage.CONVERT,
                "convert the draft checkpoint",
                convert_argv(resolved, "draft"),
                after,
                "checkpoints",
                ("tensorrt_llm",),
            )
        )
        steps.append(
            _step(
                "engine.draft",
                Stage.ENGINE,
                "build the draft engine (trtllm-build)",
                build_argv(resolved, "convert.draft", "draft"),
                ("convert.draft",),
                "engines",
                BUILD_NEEDS,
            )
        )
        engines += ("engine.draft",)
    steps.append(
        Step(
            "emit.engine",
            Stage.EMIT,
            "write serve.sh and bench commands for the engine",
            depends_on=engines,
            action="emit_engine",
            outputs=("serve.sh", "bench.sh", BENCH_DATASET),
        )
    )
    return steps
