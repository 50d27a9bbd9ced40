"""The typed context every deploy template gets (templates never see the raw profile).

Every value printed into YAML goes through the `yaml_str` filter and every value printed into a shell
script through `sh`, on top of the schema's name checks, so a hostile profile value stays data.

Triton facts the templates print: the image's server binary `/opt/tritonserver/bin/tritonserver` and its ports
8000 HTTP, 8001 gRPC, 8002 metrics (triton-inference-server/tensorrtllm_backend README.md, commit
c75a081d8207a89050fecb3681eee2db402fcef9: `TRITONSERVER=` and the server's start-up log); the probes'
`/v2/health/ready` and `/v2/health/live` are the KServe v2 protocol's health endpoints (upstream path and
commit: UNKNOWN, not read here).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from specdeploy.errors import UsageError
from specdeploy.issues import ProfileError
from specdeploy.profile.images import image_for
from specdeploy.profile.topology import Topology, deploy_name, gpu_product, topology, topology_issues
from specdeploy.resolve.resolved import Resolved

TARGETS = ("container", "k8s", "slurm")
REPO_DIR = "/opt/specdeploy/triton"
"""Where the Dockerfile copies the artifact's Triton repository."""
MODEL_CACHE = "/models"
SSH_PORT = 2222
PROBE_PERIOD_S = 10
LWS_VERSION = "leaderworkerset.x-k8s.io/v1"


@dataclass(frozen=True)
class DeployContext:
    """What the Dockerfile, the Kubernetes objects and the sbatch script print."""

    name: str
    namespace: str | None
    base_image: str
    base_image_source: str
    served_image: str
    trtllm_version: str
    topology: Topology
    gpu_product: str | None
    hf_token_secret: str | None
    hf_token_key: str
    model_cache_size: str
    storage_class: str | None
    startup_failure_threshold: int
    ssh_secret: str
    slurm_partition: str | None
    slurm_account: str | None
    slurm_time: str
    slurm_model_cache: str
    repo_dir: str = REPO_DIR
    model_cache: str = MODEL_CACHE
    ssh_port: int = SSH_PORT
    probe_period_s: int = PROBE_PERIOD_S
    leader_script: str = ""
    """Multi-node: the rendered leader.sh, shipped in the ConfigMap (render fills it in)."""
    worker_script: str = ""

    @property
    def launch(self) -> list[str]:
        """The multi-node command rank 0 serves with (trtllm-llmapi-launch runs the workers' side itself)."""
        return ["trtllm-llmapi-launch", "/opt/tritonserver/bin/tritonserver", f"--model-repository={self.repo_dir}"]


def build_context(resolved: Resolved, targets: list[str] | tuple[str, ...]) -> DeployContext:
    """The context for these targets; every reason they cannot be rendered raises one UsageError (exit 2)."""
    profile = resolved.profile
    unknown = [t for t in targets if t not in TARGETS]
    if unknown:
        raise UsageError(f"unknown deploy target(s) {', '.join(unknown)}", hint=f"choose from {', '.join(TARGETS)}")
    issues = [resolved.loaded.locate(i) for i in topology_issues(profile, targets)]
    if list(targets) != list(profile.deploy.targets):  # `render --target`: the profile does not name them
        issues = [
            replace(
                i,
                path=("--target",),
                suggestion="set runtime.backend: pytorch",
                file=None,
                line=None,
                col=None,
                snippet=None,
            )
            if i.path == ("deploy", "targets")
            else i
            for i in issues
        ]
    if issues:
        raise ProfileError(issues)
    deploy, kube, slurm = profile.deploy, profile.deploy.kubernetes, profile.deploy.slurm
    known = image_for(profile.runtime.trtllm_version)
    if deploy.image is not None:
        base, source = deploy.image, "deploy.image in the profile"
    elif known is not None:
        base, source = known.ref, f"TensorRT-LLM {known.trtllm_version}: {known.source}"
    else:  # only reachable without the container target; the other targets name served_image
        base, source = "", "UNKNOWN"
    name = deploy_name(profile, resolved.loaded.name)
    return DeployContext(
        name=name,
        namespace=kube.namespace,
        base_image=base,
        base_image_source=source,
        served_image=deploy.served_image or f"{name}:specdeploy",
        trtllm_version=profile.runtime.trtllm_version,
        topology=topology(profile),
        gpu_product=gpu_product(profile),
        hf_token_secret=kube.hf_token_secret,
        hf_token_key=kube.hf_token_key,
        model_cache_size=kube.model_cache_size,
        storage_class=kube.storage_class,
        startup_failure_threshold=-(-kube.startup_timeout_s // PROBE_PERIOD_S),
        ssh_secret=kube.ssh_secret,
        slurm_partition=slurm.partition,
        slurm_account=slurm.account,
        slurm_time=slurm.time_limit,
        slurm_model_cache=slurm.model_cache,
    )
