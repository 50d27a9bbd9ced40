"""The offline checks catch what they claim to, hostile values stay data, and topology errors exit 2."""

from __future__ import annotations

import dataclasses
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from specdeploy.api import load_and_resolve, validate
from specdeploy.deploy.check import check_dockerfile, check_manifest, shellcheck, validate_object
from specdeploy.deploy.context import TARGETS, build_context
from specdeploy.deploy.render import render_files
from specdeploy.issues import ProfileError

MULTI = "h200-mtp-deepseek-v3-2node"


def _objects(files: dict[str, bytes], rel: str) -> list[dict]:  # type: ignore[type-arg]
    return [o for o in yaml.safe_load_all(files[rel].decode()) if o]


def test_multi_node_renders_a_leaderworkerset_sized_from_the_profile_and_gpu_table() -> None:
    context = build_context(load_and_resolve(MULTI), TARGETS)
    files = render_files(context, TARGETS)
    objects = {o["kind"]: o for o in _objects(files, "k8s/leaderworkerset.yaml")}
    lws = objects["LeaderWorkerSet"]["spec"]["leaderWorkerTemplate"]
    assert lws["size"] == 2  # TP 8 x PP 2 over 8-GPU H200 nodes
    leader = lws["leaderTemplate"]["spec"]
    assert leader["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 8
    assert leader["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-H200"}
    assert objects["ConfigMap"]["data"]["leader.sh"] == files["k8s/leader.sh"].decode()
    assert "trtllm-llmapi-launch /opt/tritonserver/bin/tritonserver" in files["k8s/leader.sh"].decode()
    sbatch = files["slurm/sbatch.sh"].decode()
    assert "#SBATCH --nodes=2" in sbatch and "#SBATCH --ntasks-per-node=8" in sbatch and "srun --mpi=pmix" in sbatch
    assert "FROM nvcr.io/nvidia/tritonserver:26.07-trtllm-python-py3" in files["container/Dockerfile"].decode()
    assert objects["Service"]["spec"]["selector"]["leaderworkerset.sigs.k8s.io/worker-index"] == "0"


def test_one_node_probes_gpus_secret_by_reference() -> None:
    files = render_files(build_context(load_and_resolve("h200-eagle3"), ["k8s"]), ["k8s"])
    objects = {o["kind"]: o for o in _objects(files, "k8s/deployment.yaml")}
    pod = objects["Deployment"]["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["readinessProbe"]["httpGet"]["path"] == "/v2/health/ready"
    assert container["livenessProbe"]["httpGet"]["path"] == "/v2/health/live"
    startup = container["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 3600
    assert container["resources"]["limits"] == {"nvidia.com/gpu": 1}
    token = next(e for e in container["env"] if e["name"] == "HF_TOKEN")
    assert token["valueFrom"]["secretKeyRef"]["name"] == "hf-token" and "value" not in token
    claim = objects["PersistentVolumeClaim"]["metadata"]["name"]
    assert pod["volumes"][0]["persistentVolumeClaim"]["claimName"] == claim
    assert {p["port"] for p in objects["Service"]["spec"]["ports"]} == {8000, 8001, 8002}


def test_the_checks_are_not_vacuous() -> None:
    files = render_files(build_context(load_and_resolve(MULTI), TARGETS), TARGETS)
    objects = _objects(files, "k8s/leaderworkerset.yaml")
    lws = next(o for o in objects if o["kind"] == "LeaderWorkerSet")
    assert validate_object(lws) == []
    bad = yaml.safe_load(yaml.safe_dump(lws))
    bad["spec"]["leaderWorkerTemplate"]["sise"] = 2
    assert any("sise" in p for p in validate_object(bad))
    bad = yaml.safe_load(yaml.safe_dump(lws))  # a pod-template typo: checked against Kubernetes' PodTemplateSpec
    bad["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["imagee"] = "x"
    assert validate_object(bad)
    bad = yaml.safe_load(yaml.safe_dump(lws))
    bad["spec"]["leaderWorkerTemplate"]["restartPolicy"] = "Always"
    assert validate_object(bad)
    service = next(o for o in objects if o["kind"] == "Service")
    service["spec"]["ports"][0]["port"] = "http"
    assert validate_object(service)
    assert check_manifest("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {replica: 1}\n")
    assert shellcheck("#!/bin/bash\nrm -rf $1/*\n")
    assert check_dockerfile("FROM a\nARG HF_TOKEN\nCOPY triton/ /x/\n", None)


HOSTILE = "x\"\nkind: Secret\n$(touch /tmp/pwned-specdeploy); `id`; 'q'"


def test_hostile_profile_values_are_refused_at_validation(tmp_path: Path) -> None:
    for key, value in [
        ("deploy.name", "web\n  evil: 1"),
        ("deploy.kubernetes.gpu_product", 'a"\nfoo: bar'),
        ("deploy.slurm.partition", "gpu; rm -rf /"),
        ("deploy.slurm.model_cache", "/x $(id)"),
        ("deploy.served_image", "img\nRUN curl evil"),
        ("deploy.kubernetes.hf_token_secret", "A B"),
    ]:
        profile = tmp_path / "p.yaml"
        profile.write_text(f"extends: {MULTI}\n" + yaml.safe_dump({"deploy": _nested(key.split(".")[1:], value)}))
        [result] = validate([str(profile)])
        assert not result.ok and any(i.path[:1] == ("deploy",) for i in result.errors), key


def _nested(keys: list[str], value: str) -> dict:  # type: ignore[type-arg]
    return {keys[0]: value} if len(keys) == 1 else {keys[0]: _nested(keys[1:], value)}


def test_hostile_values_past_the_schema_stay_data(tmp_path: Path) -> None:
    """Defense in depth: a context holding hostile strings still renders YAML and shell that keep them as data."""
    context = dataclasses.replace(
        build_context(load_and_resolve(MULTI), TARGETS),
        served_image=HOSTILE,
        slurm_model_cache=HOSTILE,
        namespace=HOSTILE,
        gpu_product=HOSTILE,
    )
    files = render_files(context, ["k8s", "slurm"])
    for obj in _objects(files, "k8s/leaderworkerset.yaml"):
        assert obj["kind"] != "Secret" and obj["metadata"]["namespace"] == HOSTILE
        if obj["kind"] == "LeaderWorkerSet":
            pod = obj["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]
            assert pod["containers"][0]["image"] == HOSTILE and set(pod) == {
                "nodeSelector",
                "tolerations",
                "containers",
                "volumes",
            }
    script = tmp_path / "sbatch.sh"
    script.write_bytes(files["slurm/sbatch.sh"])
    stub = tmp_path / "bin"
    stub.mkdir()
    (stub / "srun").write_text('#!/bin/bash\nprintf "%s\\n" "$@"\n')
    (stub / "srun").chmod(0o755)
    done = subprocess.run(
        ["bash", str(script)],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "PATH": f"{stub}:{os.environ['PATH']}"},
    )
    assert done.returncode == 0, done.stderr
    assert f"--container-image={HOSTILE}" in done.stdout and not Path("/tmp/pwned-specdeploy").exists()
    for target in ("slurm", "container"):  # a bare line (a directive, a comment) refuses a newline
        with pytest.raises(ValueError, match="control character"):
            render_files(dataclasses.replace(context, name="a\nb"), [target])


@pytest.mark.parametrize(
    ("sets", "where", "words"),
    [
        (
            ("hardware.tensor_parallel=16", "hardware.pipeline_parallel=1"),
            ("hardware", "tensor_parallel"),
            "does not fit inside one node",
        ),
        (
            (
                "hardware.tensor_parallel=8",
                "hardware.pipeline_parallel=3",
                "hardware.count=24",
                "deploy.gpus_per_node=16",
            ),
            ("hardware", "pipeline_parallel"),
            "do not fill whole nodes",
        ),
        (("runtime.trtllm_version=1.3.0",), ("runtime", "trtllm_version"), "no published"),
        (("hardware.gpu=auto",), ("deploy", "gpus_per_node"), "node size"),
    ],
)
def test_what_cannot_be_deployed_is_a_located_profile_error(
    sets: tuple[str, ...], where: tuple[str, str], words: str
) -> None:
    [result] = validate([MULTI], sets)
    assert any(i.path == where and words in i.message for i in result.errors), result.errors
    with pytest.raises(ProfileError):
        build_context(load_and_resolve(MULTI, (*sets, "deploy.targets=[]")), TARGETS)


def test_an_explicit_image_serves_an_unknown_release() -> None:
    sets = ("runtime.trtllm_version=1.3.0", "deploy.image=registry.example/triton-trtllm:1.3.0")
    context = build_context(load_and_resolve(MULTI, sets), ["container"])
    dockerfile = render_files(context, ["container"])["container/Dockerfile"].decode()
    assert "FROM registry.example/triton-trtllm:1.3.0\n" in dockerfile


def test_a_shellcheck_that_hangs_is_a_finding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from specdeploy.deploy import check

    hung = tmp_path / "shellcheck"
    hung.write_text("#!/bin/sh\nsleep 30\n")
    hung.chmod(0o755)
    monkeypatch.setattr(check, "_shellcheck", lambda: str(hung))
    monkeypatch.setattr(check, "SHELLCHECK_TIMEOUT_S", 1.0)
    assert shellcheck("echo hi\n") == ["shellcheck failed: shellcheck did not answer within 1 s"]
