"""Rules read from upstream that Triton's own load does not enforce: what the llmapi model and the C++
tensorrtllm backend need to run, so a repository rendered by an older specdeploy (or by hand) is caught.

Sources: triton-inference-server/tensorrtllm_backend @ c2e65b8 (TB) and NVIDIA/TensorRT-LLM
`triton_backend/` (TL) at the commit given per rule; shared/reference/upstream-audit.md section B.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specdeploy.boundedio import InputError, loads_yaml
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
    from specdeploy.plugin.registry import engines

    args = {k: v for k, v in data.items() if k != "triton_config"}
    engine = next(e for e in engines().values() if "llmapi" in e.layouts)
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
