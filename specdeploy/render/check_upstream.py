"""Rules read from upstream that Triton's own load does not enforce: what the llmapi model, the C++
tensorrtllm backend and Triton's vLLM backend need to run, so a repository rendered by an older specdeploy (or by
hand) is caught.

Sources: triton-inference-server/tensorrtllm_backend @ c2e65b8 (TB) and NVIDIA/TensorRT-LLM
`triton_backend/` (TL) at the commit given per rule; docs/design/upstream-audit.md §B. Triton's vLLM backend:
triton-inference-server/vllm_backend src/model.py @ r24.10 (VB; the vLLM engine's tables/triton-vllm-r24.10.json).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specdeploy.boundedio import InputError, loads_yaml, read_json
from specdeploy.plugin.registry import engine_for_layout
from specdeploy.render.check_pbtxt import Model, RepoIssue, params
from specdeploy.render.check_rules import MANIFEST_FILE

KV_KEY = "kv_cache_free_gpu_mem_fraction"


def _instances(model: Model) -> int:
    return sum(int(g.count or 1) for g in model.config.instance_group) or 1


def _groups(ids: str) -> list[set[int]]:
    return [{int(g) for g in group.split(",") if g.strip().isdigit()} for group in ids.split(";") if group.strip()]


def _llm_args(file: str, data: dict[str, Any], release: str | None) -> list[RepoIssue]:
    """model.yaml's LLM() arguments against the contract table of the release the repository was rendered for."""
    if not release:
        return []  # rendered before the manifest recorded it
    args = {k: v for k, v in data.items() if k != "triton_config"}
    engine = engine_for_layout("llmapi")
    if engine is None:
        return []
    return [RepoIssue(file, None, f"LLM() argument {problem.lstrip('.')} ({engine.product} {release})")
            for problem in engine.check_serving_args(args, release)]


def check_llmapi_upstream(root: Path, models: dict[str, Model], manifest: dict[str, Any]) -> list[RepoIssue]:
    """model.yaml names the checkpoint and passes the release's table; stop strings are a list; several
    instances each get a GPU group."""
    issues = []
    for model in models.values():
        path = root / model.name / "1" / "model.yaml"
        if not path.is_file():
            continue
        try:
            data = loads_yaml(path.read_text(encoding="utf-8")) or {}
        except InputError:
            continue  # check_llmapi reports it with its line
        file = f"{model.name}/1/model.yaml"
        if not isinstance(data, dict) or not data.get("model"):
            issues.append(RepoIssue(file, None, "no `model:` (the checkpoint folder or hub id): LLM(model, ...) "
                                    "has no default, so the model never loads (TB "
                                    "all_models/llmapi/tensorrt_llm/1/model.yaml:4)"))
        if isinstance(data, dict):
            issues += _llm_args(file, data, manifest.get("trtllm_version"))
        stop = next((t for t in model.config.input if t.name == "sampling_param_stop"), None)
        if stop is not None and list(stop.dims) != [-1]:
            issues.append(RepoIssue(model.file, model.line('"sampling_param_stop"'), f"sampling_param_stop dims "
                                    f"{list(stop.dims)}: a list of stop strings is dims [-1] (TL "
                                    "all_models/llmapi/tensorrt_llm/config.pbtxt @ 0a71057)"))
        count, ids = _instances(model), params(model.config).get("gpu_device_ids", "")
        if count > 1 and not ids:
            issues.append(RepoIssue(model.file, model.line("instance_group"), f"{count} instances but no "
                                    "gpu_device_ids: every instance would load the LLM on the same GPUs (TL "
                                    "llmapi model.py @ 044a90d refuses this)"))
    return issues


def check_instance_groups(models: dict[str, Model]) -> list[RepoIssue]:
    """One `;` group of gpu_device_ids per instance (instance i takes group i; TB model_instance_state.cc
    :715-718 wraps around, TL llmapi model.py @ 044a90d refuses an instance without a group)."""
    issues = []
    for model in models.values():
        ids = params(model.config).get("gpu_device_ids", "")
        if not ids or model.config.platform == "ensemble":
            continue
        groups, count = len(_groups(ids)), _instances(model)
        if count != groups:
            issues.append(RepoIssue(model.file, model.line("instance_group"), f"instance_group count {count} but "
                                    f"gpu_device_ids '{ids}' has {groups} group(s): one instance per group"))
    return issues


def _trtllm(models: dict[str, Model]) -> list[Model]:
    return [m for m in models.values() if m.config.backend == "tensorrtllm"]


def check_engine_upstream(models: dict[str, Model], manifest: dict[str, Any]) -> list[RepoIssue]:
    """The seed's name, the KV cache two models on one GPU share, orchestrator mode for two engines."""
    engines = _trtllm(models)
    # the seed's name matters where it reaches the C++ backend; the reference layout's own python model also
    # takes vLLM's `random_seed` (specdeploy/serve/llm_inputs.py)
    seeded = [m for m in models.values() if engines and any(t.name == "random_seed" for t in m.config.input)]
    issues = [RepoIssue(m.file, m.line('"random_seed"'), "input random_seed: the tensorrtllm backend reads only "
                        "`seed` (TB inflight_batcher_llm/src/utils.h:97), so the seed would be dropped silently; "
                        "rename it to seed") for m in seeded]
    for i, first in enumerate(engines):
        for second in engines[i + 1:]:
            issues += _shared_kv(first, second)
    env = (manifest.get("server_env") or {}) if manifest else None
    if len(engines) > 1 and env is not None and env.get("TRTLLM_ORCHESTRATOR") != "1":
        names = ", ".join(m.name for m in engines)
        issues.append(RepoIssue(MANIFEST_FILE, None, f"{len(engines)} tensorrtllm models ({names}) need "
                                "orchestrator mode: server_env TRTLLM_ORCHESTRATOR=1 (launch_triton_server.py "
                                "--multi-model; TB model_instance_state.cc:247-253)"))
    return issues


def _shared_kv(first: Model, second: Model) -> list[RepoIssue]:
    """Two engines on a common GPU: their KV fractions must fit in it together."""
    a, b = params(first.config), params(second.config)
    gpus_a = set().union(*_groups(a.get("gpu_device_ids", "") or "0"))
    gpus_b = set().union(*_groups(b.get("gpu_device_ids", "") or "0"))
    try:
        total = float(a.get(KV_KEY) or 0.9) + float(b.get(KV_KEY) or 0.9)  # the backend's default is 0.9
    except ValueError:
        return []
    if not gpus_a & gpus_b or total <= 1.0:
        return []
    return [RepoIssue(second.file, second.line(f'"{KV_KEY}"'), f"{first.name} and {second.name} share GPU(s) "
                      f"{sorted(gpus_a & gpus_b)} but their {KV_KEY} add up to {total:g} (> 1): split it, e.g. "
                      "0.45 each (TL examples/draft_target_model/README.md @ 11925f6 uses 0.5 each)")]


def check_vllm_upstream(root: Path, models: dict[str, Model], manifest: dict[str, Any]) -> list[RepoIssue]:
    """A vLLM backend model: decoupled, a model.json that names the model and passes the release's table, and a
    multi-GPU engine on KIND_MODEL."""
    issues = []
    for model in (m for m in models.values() if m.config.backend == "vllm"):
        if not model.decoupled:
            issues.append(RepoIssue(model.file, model.line("decoupled"), "the vLLM backend needs a decoupled model: "
                                    "its initialize asserts it (VB init_engine)"))
        file = f"{model.name}/1/model.json"
        try:
            args = read_json(root / file)
        except (OSError, InputError) as exc:
            why = exc.detail if isinstance(exc, InputError) else (exc.strerror or exc)
            issues.append(RepoIssue(file, None, f"unreadable: {why} (the backend json.loads it, VB init_engine)"))
            continue
        if not isinstance(args, dict) or not args.get("model"):
            issues.append(RepoIssue(file, None, "no `model` (a hub id or folder): vLLM would load its own default "
                                    "model (VB: AsyncEngineArgs(**model.json))"))
            continue
        engine, release = engine_for_layout("vllm"), manifest.get("vllm_version")
        if engine is not None and release:
            issues += [RepoIssue(file, None, f"AsyncEngineArgs {problem} ({engine.product} {release})")
                       for problem in engine.check_serving_args(args, str(release))]
        gpu = [g for g in model.config.instance_group if g.kind == 1]  # KIND_GPU
        if gpu and int(args.get("tensor_parallel_size", 1)) > 1:
            issues.append(RepoIssue(model.file, model.line("instance_group"), "KIND_GPU with tensor_parallel_size "
                                    "> 1: the vLLM backend refuses it (KIND_MODEL for multi-GPU models, VB "
                                    "validate_device_config)"))
    return issues
