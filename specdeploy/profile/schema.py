"""The profile language: one pydantic v2 model tree, `extra="forbid"` everywhere.

Strings are strict so a YAML 1.1 boolean (`on`, `no`) in a string slot is an error, not a silent
`True`; numbers stay lax so `2e-5` (a string to YAML 1.1) still reads as a number.

These models are the single source of truth and the one validator every command uses. Checks beyond types and
bounds are `AfterValidator`s naming functions of `checks`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictStr,
    ValidationInfo,
    field_validator,
)

from specdeploy.profile import checks

QUANTIZATIONS = ("none", "fp8", "nvfp4", "int4_awq", "w4a8_awq", "int8_sq")


def _accepts_bool(annotation: Any) -> bool:
    if annotation is bool or annotation is Any:
        return True
    return any(_accepts_bool(arg) for arg in get_args(annotation))


class Section(BaseModel):
    """Base of every profile section: unknown keys are errors, every field is documented."""

    model_config = ConfigDict(extra="forbid", validate_default=True, allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_yaml_booleans(cls, value: Any, info: ValidationInfo) -> Any:
        """YAML 1.1 reads on/off/yes/no as booleans; pydantic would turn them into 1/0 in a number slot."""
        if (
            isinstance(value, bool)
            and info.field_name
            and not _accepts_bool(cls.model_fields[info.field_name].annotation)
        ):
            raise ValueError(
                f"got the YAML boolean {str(value).lower()} where no boolean is allowed "
                "(YAML 1.1 reads on/off/yes/no as booleans: quote the value or use a number)"
            )
        return value


class Target(Section):
    """The model to serve."""

    model: Annotated[StrictStr, AfterValidator(checks.model_ref)] = Field(
        description="Hugging Face repo id (`org/name`) or a local folder holding `config.json`."
    )
    revision: StrictStr | None = Field(
        default=None,
        description="Hub revision (branch, tag or commit); a build pins it to a commit in `specdeploy.lock`.",
    )
    dtype: Literal["auto", "bfloat16", "float16", "float32"] = Field(
        default="auto",
        description="Activation/weight dtype before quantization; `auto` follows the checkpoint's `torch_dtype`.",
    )
    quantization: Literal["none", "fp8", "nvfp4", "int4_awq", "w4a8_awq", "int8_sq"] = Field(
        default="none", description="Weight quantization applied at build time (Model-Optimizer on the engine path)."
    )
    trust_remote_code: StrictBool = Field(
        default=False, description="Allow custom modelling code from the checkpoint (off unless you trust the source)."
    )


class GpuFigures(Section):
    """A GPU the built-in table lacks, described from its datasheet (dense figures: halve a sparse one)."""

    memory_gib: float = Field(gt=0, le=4096, description="Memory of one GPU, GiB.")
    memory_bandwidth_tb_s: float = Field(
        gt=0, le=100, description="Memory (HBM or GDDR) bandwidth of one GPU, TB/s (10^12 bytes/s)."
    )
    bf16_tflops: float = Field(
        gt=0,
        le=100_000,
        description="Dense FP16/BF16 tensor throughput, TFLOP/s (a datasheet's figure \"with "
        'sparsity" is twice the dense one).',
    )
    fp8: StrictBool = Field(description="Whether it has FP8 tensor cores (Ada, Hopper and later: yes; Ampere: no).")
    fp8_tflops: float | None = Field(
        default=None,
        gt=0,
        le=100_000,
        description="Dense FP8 tensor throughput, TFLOP/s; given exactly when `fp8` is true.",
    )
    interconnect_gb_s: float = Field(
        gt=0,
        le=100_000,
        description="GPU-to-GPU bandwidth, GB/s, as the datasheet gives it (NVLink, else PCIe); "
        "tensor parallelism's all-reduce runs over it.",
    )


class Hardware(Section):
    """Where it runs: GPU model, count and parallelism."""

    gpu: Annotated[StrictStr, AfterValidator(checks.gpu_name)] = Field(
        default="auto",
        description="Target GPU: one the built-in table knows (h200, h100-sxm, h100-pcie, b200, a100-80gb, "
        "a100-40gb, l40s, l4), `auto` (detected through NVML at build time), `cpu` (the reference backend), or a "
        "name of your own for a GPU you describe in `gpu_spec`.",
    )
    gpu_spec: GpuFigures | None = Field(
        default=None,
        description="The figures of a GPU the table lacks, which `gpu` names (`plan` labels them user-given).",
    )
    count: int = Field(default=1, ge=1, le=64, description="GPUs available to one deployment.")
    tensor_parallel: int = Field(default=1, ge=1, le=64, description="Tensor-parallel degree.")
    pipeline_parallel: int = Field(default=1, ge=1, le=64, description="Pipeline-parallel degree.")


class Runtime(Section):
    """Which engine (backend) and which of its releases the artifacts target."""

    trtllm_version: Annotated[StrictStr, AfterValidator(checks.known_line)] = Field(
        default="1.2.1",
        description="TensorRT-LLM release the artifacts are emitted for (`1.2.x` or the `1.3` line, "
        "e.g. `1.3.0rc23`); it selects the contract range whose rules apply (`specdeploy mechanisms` lists them).",
    )
    vllm_version: Annotated[StrictStr, AfterValidator(checks.known_vllm_release)] = Field(
        default="0.32.0",
        description="vLLM release the artifacts are emitted for (backend `vllm`; the `0.32` line); "
        "it selects the contract table whose rules apply.",
    )
    backend: Annotated[StrictStr, AfterValidator(checks.known_backend)] = Field(
        default="pytorch",
        description="The engine (an installed `specdeploy.engines` plugin): `pytorch` = LLM-API YAML, `tensorrt` = "
        "engines (TRT-LLM <= 1.2.x), `vllm` = `vllm serve`, `reference` = the CPU runtime.",
    )


class Speculative(Section):
    """The drafter mechanism, its draft length and its options."""

    mechanism: StrictStr = Field(
        default="none",
        description="Drafter mechanism: a plugin name (eagle3, mtp, draft_target, ngram, ...), `auto` or `none`.",
    )
    draft_len: Annotated[int | Literal["auto"], AfterValidator(checks.draft_len)] = Field(
        default="auto",
        description="Draft tokens per step (>= 1), or `auto` to let `specdeploy tune` choose per concurrency.",
    )
    draft_model: Annotated[StrictStr | None, AfterValidator(checks.model_ref)] = Field(
        default=None,
        description="Drafter checkpoint (repo id or folder) for mechanisms that need one (eagle3, draft_target, ...).",
    )
    draft_revision: StrictStr | None = Field(default=None, description="Hub revision of the drafter.")
    options: dict[str, Any] = Field(
        default_factory=dict,
        description="Mechanism options, validated by the mechanism's plugin (see `specdeploy mechanisms`).",
    )
    schedule: Annotated[dict[int, int] | None, AfterValidator(checks.schedule)] = Field(
        default=None,
        description="Explicit concurrency -> draft length map; keys are lower bounds (`{1: 4, 8: 2, 32: 0}`).",
    )
    max_concurrency: int | None = Field(
        default=None, ge=1, description="Speculation is switched off above this many concurrent requests."
    )


class Serving(Section):
    """Batching, sequence and memory limits of the deployment."""

    max_batch_size: int = Field(
        default=64, ge=1, le=4096, description="Largest batch the runtime schedules (concurrent sequences)."
    )
    max_seq_len: int = Field(
        default=4096, ge=16, le=1_048_576, description="Longest sequence (prompt + output) served."
    )
    max_input_len: int | None = Field(default=None, ge=1, description="Longest prompt; defaults to max_seq_len - 1.")
    max_num_tokens: int | None = Field(
        default=None,
        ge=1,
        description="Token budget per iteration; defaults to max(8192, max_batch_size * (1 + draft_len)).",
    )
    kv_cache_free_gpu_memory_fraction: float = Field(
        default=0.9,
        gt=0.0,
        le=1.0,
        description="Fraction of the GPU memory left after weights that the KV cache may take.",
    )
    streaming: StrictBool = Field(default=False, description="Stream tokens; makes the Triton model decoupled.")


class Sla(Section):
    """Latency limits used by the goodput objective."""

    p99_itl_ms: float | None = Field(
        default=None, gt=0, description="Upper bound on the 99th-percentile inter-token latency."
    )
    p99_ttft_ms: float | None = Field(
        default=None, gt=0, description="Upper bound on the 99th-percentile time to first token."
    )


class Tune(Section):
    """How `specdeploy tune` measures and what it optimises."""

    dataset: StrictStr = Field(
        default="mt-bench",
        description="Built-in dataset (`mt-bench`, `humaneval`) or a SPEED-Bench JSONL path (`question_id`, "
        "`category`, `turns`; relative to the current folder), checked by `validate`.",
    )
    prompts: int = Field(
        default=32,
        ge=1,
        le=100_000,
        description="Prompts drawn from the dataset, spread evenly over it (MT-Bench: 8 or more cover every category).",
    )
    output_len: int = Field(default=128, ge=1, le=65_536, description="Tokens generated per prompt.")
    concurrency: Annotated[list[int], AfterValidator(checks.positive_sorted)] = Field(
        default_factory=lambda: [1, 2, 4, 8, 16, 32, 64], description="Concurrency levels the schedule is tuned for."
    )
    draft_lens: Annotated[list[int] | None, AfterValidator(checks.positive_sorted)] = Field(
        default=None, description="Candidate draft lengths; default 1..K_max of the mechanism."
    )
    objective: Literal["throughput", "latency", "goodput"] = Field(
        default="throughput",
        description="What to maximise per concurrency: system tokens/s, per-user latency, or goodput within the SLA.",
    )
    sla: Sla = Field(default_factory=Sla, description="Latency limits for the goodput objective.")
    acceptance_al: Annotated[dict[int, float] | None, AfterValidator(checks.acceptance_al)] = Field(
        default=None,
        description="Your measured mean acceptance length per draft length (`{4: 2.6}`: 2.6 tokens per step at "
        "K = 4, the bonus token included); `plan` and `tune --backend model` use it in place of the mechanism's "
        "published prior (an i.i.d. rate fitted to the pairs).",
    )
    acceptance_rates: Annotated[list[float] | None, AfterValidator(checks.acceptance_rates)] = Field(
        default=None,
        description="Your measured per-position acceptance a_1, a_2, ... (share of steps whose i-th drafted token "
        "was accepted, as vLLM and TensorRT-LLM report it; non-increasing); wins over acceptance_al.",
    )
    repeats: int = Field(default=3, ge=1, le=50, description="Repeats of each confirmed measurement (median + MAD).")
    parallel: Annotated[int | Literal["auto"], AfterValidator(checks.parallel)] = Field(
        default="auto",
        description="With `tune --ray`: at most this many measurement points at once (`auto`: as many as the "
        "cluster's free GPUs allow, each point reserving tensor_parallel x pipeline_parallel of them).",
    )
    time_budget_s: float | None = Field(
        default=None,
        gt=0,
        description="Seconds of measuring the whole tune may spend, the final mixed-concurrency replay included: "
        "the search stops early enough to leave room for it and emits the best schedule so far.",
    )


class Triton(Section):
    """How the Triton model repository is rendered."""

    layout: Annotated[StrictStr, AfterValidator(checks.known_layout)] = Field(
        default="auto",
        description="Repository layout (one an installed engine serves: llmapi, engine, reference, vllm); `auto` "
        "follows the backend (pytorch -> llmapi, tensorrt -> engine); a vLLM build renders the vllm layout only when "
        "named here (vLLM serves itself).",
    )
    model_name: StrictStr = Field(default="tensorrt_llm", description="Name of the served model in the repository.")
    instances: int = Field(default=1, ge=1, le=64, description="Model instances.")
    decoupled: StrictBool | None = Field(
        default=None, description="Decoupled transaction policy; defaults to serving.streaming."
    )


class Kubernetes(Section):
    """Kubernetes objects rendered by `specdeploy render --target k8s` (names are DNS-1123 labels)."""

    namespace: Annotated[StrictStr | None, AfterValidator(checks.k8s_name)] = Field(
        default=None, description="Namespace written into every object; none: the one `kubectl apply -n` names."
    )
    hf_token_secret: Annotated[StrictStr | None, AfterValidator(checks.k8s_name)] = Field(
        default="hf-token",
        description="Secret holding the Hugging Face token (referenced, never rendered); null: no token.",
    )
    hf_token_key: Annotated[StrictStr, AfterValidator(checks.k8s_key)] = Field(
        default="token", description="Key of the token inside that Secret."
    )
    model_cache_size: Annotated[StrictStr, AfterValidator(checks.quantity)] = Field(
        default="1000Gi", description="Size of the PersistentVolumeClaim that caches checkpoints (HF_HOME)."
    )
    storage_class: Annotated[StrictStr | None, AfterValidator(checks.k8s_name)] = Field(
        default=None, description="StorageClass of the model cache claim; none: the cluster's default."
    )
    gpu_product: Annotated[StrictStr | None, AfterValidator(checks.label_value)] = Field(
        default=None,
        description="`nvidia.com/gpu.product` node label to select; none: the GPU table's label for hardware.gpu.",
    )
    startup_timeout_s: int = Field(
        default=3600,
        ge=60,
        le=86_400,
        description="How long the startupProbe waits for the engine to load before Kubernetes restarts the pod.",
    )
    ssh_secret: Annotated[StrictStr, AfterValidator(checks.k8s_name)] = Field(
        default="mpi-ssh",
        description="Multi-node only: Secret with the SSH key pair (`id_ed25519`, `id_ed25519.pub`, "
        "`authorized_keys`) mpirun uses between the pods of a group.",
    )


class Slurm(Section):
    """The sbatch script rendered by `specdeploy render --target slurm` (pyxis/enroot containers)."""

    partition: Annotated[StrictStr | None, AfterValidator(checks.slurm_word)] = Field(
        default=None, description="`--partition`; none: the cluster's default."
    )
    account: Annotated[StrictStr | None, AfterValidator(checks.slurm_word)] = Field(
        default=None, description="`--account`; none: the user's default."
    )
    time_limit: Annotated[StrictStr, AfterValidator(checks.slurm_time)] = Field(
        default="04:00:00", description="`--time` (`[D-]HH:MM:SS`)."
    )
    model_cache: Annotated[StrictStr, AfterValidator(checks.safe_path)] = Field(
        default="/mnt/models", description="Host folder (on every node) mounted as the model cache (HF_HOME)."
    )


class Deploy(Section):
    """Deployment targets rendered from this profile (`specdeploy render --target`, and `build`)."""

    targets: Annotated[list[Literal["container", "k8s", "slurm"]], AfterValidator(checks.unique)] = Field(
        default_factory=list, description="Targets `build` renders into `deploy/<target>/` of the artifact."
    )
    name: Annotated[StrictStr | None, AfterValidator(checks.k8s_name)] = Field(
        default=None,
        description="Name of the Kubernetes objects and the Slurm job; none: derived from the profile name.",
    )
    image: Annotated[StrictStr | None, AfterValidator(checks.image_ref)] = Field(
        default=None,
        description="Base image of the Dockerfile; none: NVIDIA's Triton + TensorRT-LLM image of "
        "runtime.trtllm_version (an error where no published image is known for it).",
    )
    served_image: Annotated[StrictStr | None, AfterValidator(checks.image_ref)] = Field(
        default=None,
        description="The image built from that Dockerfile, as Kubernetes and Slurm pull it; none: `<name>:specdeploy`.",
    )
    gpus_per_node: int | None = Field(
        default=None, ge=1, le=64, description="GPUs of one node; none: the GPU table's node size for hardware.gpu."
    )
    kubernetes: Kubernetes = Field(default_factory=Kubernetes, description="Kubernetes settings.")
    slurm: Slurm = Field(default_factory=Slurm, description="Slurm settings.")


class Profile(Section):
    """A deployment profile: target, hardware, runtime, drafter, serving limits, tuning and Triton settings."""

    description: StrictStr | None = Field(default=None, description="One line saying what this profile deploys.")
    target: Target = Field(description="The model to serve.")
    hardware: Hardware = Field(default_factory=Hardware, description="Where it runs.")
    runtime: Runtime = Field(default_factory=Runtime, description="Which TensorRT-LLM release and backend.")
    speculative: Speculative = Field(default_factory=Speculative, description="The drafter and its draft length.")
    serving: Serving = Field(default_factory=Serving, description="Batching and memory limits.")
    tune: Tune = Field(default_factory=Tune, description="How `specdeploy tune` measures.")
    triton: Triton = Field(default_factory=Triton, description="How the Triton model repository is rendered.")
    deploy: Deploy = Field(default_factory=Deploy, description="Deployment targets: container, Kubernetes, Slurm.")
