"""The rules behind `check_repo` that hold for every layout (each returns a list of RepoIssue): ensembles, GPUs
and instance groups as Triton and the GPU backends read them. A layout's own rules are its `TritonLayout.check`.

Sources: triton-inference-server/tensorrtllm_backend @ c2e65b8 (TB) and NVIDIA/TensorRT-LLM `triton_backend/` (TL)
at the commit given per rule; docs/design/upstream-audit.md §B.
"""

from __future__ import annotations

from typing import Any

from specdeploy.render.check_pbtxt import Model, RepoIssue, model_config_pb2, params

KIND_GPU = 1


def _dtype(value: int) -> str:
    return str(model_config_pb2().DataType.Name(value))


def _dims_agree(a: list[int], b: list[int]) -> bool:
    return len(a) == len(b) and all(x == y or -1 in (x, y) for x, y in zip(a, b, strict=True))


def check_ensembles(models: dict[str, Model]) -> list[RepoIssue]:
    issues: list[RepoIssue] = []
    for ens in (m for m in models.values() if m.config.platform == "ensemble"):
        issues += _ensemble(ens, models)
    return issues


def _ensemble(ens: Model, models: dict[str, Model]) -> list[RepoIssue]:  # noqa: C901 - one check per Triton rule
    cfg, file, issues = ens.config, ens.file, []
    if len(cfg.instance_group):
        issues.append(RepoIssue(file, ens.line("instance_group"), "an ensemble must not have an instance_group"))
    produced = {t.name: (t.data_type, list(t.dims), "ensemble input") for t in cfg.input}
    used: set[str] = set()
    written: set[str] = set()
    for step in cfg.ensemble_scheduling.step:
        where = ens.line(f'model_name: "{step.model_name}"')
        model = models.get(step.model_name)
        if model is None:
            issues.append(RepoIssue(file, where, f"step model '{step.model_name}' is not in the repository"))
            continue
        inputs = {t.name: t for t in model.config.input}
        outputs = {t.name: t for t in model.config.output}
        for key, value in step.input_map.items():
            line = ens.line(f'key: "{key}" value: "{value}"')
            used.add(value)
            if key not in inputs:
                issues.append(
                    RepoIssue(
                        file,
                        line,
                        f"input_map key '{key}' is not an input of model "
                        f"'{step.model_name}' (mapping to non-existing input)",
                    )
                )
                continue
            if value not in produced:
                issues.append(
                    RepoIssue(file, line, f"tensor '{value}' is not produced by any earlier step or ensemble input")
                )
                continue
            dtype, dims, source = produced[value]
            want = inputs[key]
            if dtype != want.data_type:
                issues.append(
                    RepoIssue(
                        file,
                        line,
                        f"inconsistent data type: '{value}' is {_dtype(dtype)} "
                        f"({source}), {step.model_name}.{key} expects {_dtype(want.data_type)}",
                    )
                )
            elif not _dims_agree(dims, list(want.dims)):
                issues.append(
                    RepoIssue(
                        file,
                        line,
                        f"inconsistent shape: '{value}' is {dims} ({source}), "
                        f"{step.model_name}.{key} expects {list(want.dims)}",
                    )
                )
        for key, value in step.output_map.items():
            line = ens.line(f'key: "{key}" value: "{value}"')
            if key not in outputs:
                issues.append(
                    RepoIssue(file, line, f"output_map key '{key}' is not an output of model '{step.model_name}'")
                )
                continue
            produced[value] = (outputs[key].data_type, list(outputs[key].dims), f"{step.model_name}.{key}")
            written.add(value)
        if model.config.max_batch_size and cfg.max_batch_size > model.config.max_batch_size:
            issues.append(
                RepoIssue(
                    file,
                    ens.line("max_batch_size"),
                    f"ensemble max_batch_size "
                    f"{cfg.max_batch_size} exceeds step '{step.model_name}' max_batch_size "
                    f"{model.config.max_batch_size}",
                )
            )
    for tensor in cfg.input:
        if tensor.name not in used:
            issues.append(
                RepoIssue(file, ens.line(f'"{tensor.name}"'), f"ensemble input '{tensor.name}' is not used by any step")
            )
    for tensor in cfg.output:
        line = ens.line(f'"{tensor.name}"')
        if tensor.name not in written:
            issues.append(RepoIssue(file, line, f"ensemble output '{tensor.name}' is not written by any step"))
        elif produced[tensor.name][0] != tensor.data_type:
            issues.append(
                RepoIssue(
                    file,
                    line,
                    f"inconsistent data type: ensemble output '{tensor.name}' is "
                    f"{_dtype(tensor.data_type)}, {produced[tensor.name][2]} produces "
                    f"{_dtype(produced[tensor.name][0])}",
                )
            )
    derived = any(models[s.model_name].decoupled for s in cfg.ensemble_scheduling.step if s.model_name in models)
    if cfg.HasField("model_transaction_policy") and ens.decoupled != derived:
        issues.append(
            RepoIssue(
                file,
                ens.line("decoupled"),
                f"ensemble decoupled: {str(ens.decoupled).lower()} "
                f"but its steps make it {'decoupled' if derived else 'not decoupled'}",
            )
        )
    return issues


def check_instances(models: dict[str, Model], manifest: dict[str, Any]) -> list[RepoIssue]:
    gpus = manifest.get("gpus")
    issues = []
    for model in models.values():
        for group in model.config.instance_group:
            if group.kind != KIND_GPU or gpus is None:
                continue
            line = model.line("KIND_GPU")
            bad = [g for g in group.gpus if g >= gpus]
            if bad:
                issues.append(
                    RepoIssue(model.file, line, f"KIND_GPU instance on GPU {bad} but the profile has {gpus} GPU(s)")
                )
            elif not group.gpus and group.count > gpus:
                issues.append(
                    RepoIssue(model.file, line, f"KIND_GPU count {group.count} exceeds the profile's {gpus} GPU(s)")
                )
    return issues


def check_parallel(models: dict[str, Model], manifest: dict[str, Any]) -> list[RepoIssue]:
    """gpu_device_ids: each `;` group holds TP x PP distinct GPUs that exist."""
    if not manifest:
        return []
    world = int(manifest.get("tensor_parallel", 1)) * int(manifest.get("pipeline_parallel", 1))
    gpus = manifest.get("gpus")
    issues = []
    for model in models.values():
        ids = params(model.config).get("gpu_device_ids", "")
        if not ids:
            continue
        line = model.line('"gpu_device_ids"')
        per_world = world if model.name != "tensorrt_llm_draft" else None
        seen: list[int] = []
        for group in ids.split(";"):
            try:
                members = [int(x) for x in group.split(",")]
            except ValueError:
                issues.append(RepoIssue(model.file, line, f"gpu_device_ids '{ids}' is not like '0,1;2,3'"))
                break
            if per_world is not None and len(members) != per_world:
                issues.append(
                    RepoIssue(
                        model.file, line, f"gpu_device_ids group '{group}' has {len(members)} GPU(s), TP x PP = {world}"
                    )
                )
            seen += members
        if gpus is not None and any(i >= gpus for i in seen):
            issues.append(
                RepoIssue(model.file, line, f"gpu_device_ids '{ids}' names a GPU beyond the profile's {gpus}")
            )
        if len(seen) != len(set(seen)):
            issues.append(RepoIssue(model.file, line, f"gpu_device_ids '{ids}' uses a GPU twice"))
    return issues


def instance_count(model: Model) -> int:
    """The model's instances over all its instance groups (a group without a count has one)."""
    return sum(int(g.count or 1) for g in model.config.instance_group) or 1


def gpu_groups(ids: str) -> list[set[int]]:
    """The GPUs of each `;` group of a gpu_device_ids string."""
    return [{int(g) for g in group.split(",") if g.strip().isdigit()} for group in ids.split(";") if group.strip()]


def check_instance_groups(models: dict[str, Model]) -> list[RepoIssue]:
    """One `;` group of gpu_device_ids per instance (instance i takes group i; TB model_instance_state.cc
    :715-718 wraps around, TL llmapi model.py @ 044a90d refuses an instance without a group)."""
    issues = []
    for model in models.values():
        ids = params(model.config).get("gpu_device_ids", "")
        if not ids or model.config.platform == "ensemble":
            continue
        groups, count = len(gpu_groups(ids)), instance_count(model)
        if count != groups:
            issues.append(
                RepoIssue(
                    model.file,
                    model.line("instance_group"),
                    f"instance_group count {count} but "
                    f"gpu_device_ids '{ids}' has {groups} group(s): one instance per group",
                )
            )
    return issues
