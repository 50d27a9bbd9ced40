"""The individual repository rules behind `check_repo` (each returns a list of RepoIssue)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specdeploy.boundedio import InputError, loads_yaml, read_json
from specdeploy.render.check_pbtxt import Model, RepoIssue, model_config_pb2, params
from specdeploy.render.context import MANIFEST as MANIFEST_FILE

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
                issues.append(RepoIssue(file, line, f"input_map key '{key}' is not an input of model "
                                        f"'{step.model_name}' (mapping to non-existing input)"))
                continue
            if value not in produced:
                issues.append(RepoIssue(file, line, f"tensor '{value}' is not produced by any earlier step "
                                        "or ensemble input"))
                continue
            dtype, dims, source = produced[value]
            want = inputs[key]
            if dtype != want.data_type:
                issues.append(RepoIssue(file, line, f"inconsistent data type: '{value}' is {_dtype(dtype)} "
                                        f"({source}), {step.model_name}.{key} expects {_dtype(want.data_type)}"))
            elif not _dims_agree(dims, list(want.dims)):
                issues.append(RepoIssue(file, line, f"inconsistent shape: '{value}' is {dims} ({source}), "
                                        f"{step.model_name}.{key} expects {list(want.dims)}"))
        for key, value in step.output_map.items():
            line = ens.line(f'key: "{key}" value: "{value}"')
            if key not in outputs:
                issues.append(RepoIssue(file, line, f"output_map key '{key}' is not an output of model "
                                        f"'{step.model_name}'"))
                continue
            produced[value] = (outputs[key].data_type, list(outputs[key].dims), f"{step.model_name}.{key}")
            written.add(value)
        if model.config.max_batch_size and cfg.max_batch_size > model.config.max_batch_size:
            issues.append(RepoIssue(file, ens.line("max_batch_size"), f"ensemble max_batch_size "
                                    f"{cfg.max_batch_size} exceeds step '{step.model_name}' max_batch_size "
                                    f"{model.config.max_batch_size}"))
    for tensor in cfg.input:
        if tensor.name not in used:
            issues.append(RepoIssue(file, ens.line(f'"{tensor.name}"'), f"ensemble input '{tensor.name}' is "
                                    "not used by any step"))
    for tensor in cfg.output:
        line = ens.line(f'"{tensor.name}"')
        if tensor.name not in written:
            issues.append(RepoIssue(file, line, f"ensemble output '{tensor.name}' is not written by any step"))
        elif produced[tensor.name][0] != tensor.data_type:
            issues.append(RepoIssue(file, line, f"inconsistent data type: ensemble output '{tensor.name}' is "
                                    f"{_dtype(tensor.data_type)}, {produced[tensor.name][2]} produces "
                                    f"{_dtype(produced[tensor.name][0])}"))
    derived = any(models[s.model_name].decoupled for s in cfg.ensemble_scheduling.step if s.model_name in models)
    if cfg.HasField("model_transaction_policy") and ens.decoupled != derived:
        issues.append(RepoIssue(file, ens.line("decoupled"), f"ensemble decoupled: {str(ens.decoupled).lower()} "
                                f"but its steps make it {'decoupled' if derived else 'not decoupled'}"))
    return issues


def check_decoupled(models: dict[str, Model]) -> list[RepoIssue]:
    """Streaming needs a decoupled tensorrt_llm AND a decoupled BLS; draft/target cannot stream at all."""
    issues = []
    bls = models.get("tensorrt_llm_bls")
    if bls is None:
        return []
    bls_params = params(bls.config)
    target = models.get(bls_params.get("tensorrt_llm_model_name") or "tensorrt_llm")
    if target is not None and target.decoupled != bls.decoupled:
        issues.append(RepoIssue(bls.file, bls.line("decoupled"), f"decoupled mismatch: tensorrt_llm_bls is "
                                f"{str(bls.decoupled).lower()}, {target.name} is {str(target.decoupled).lower()} "
                                "(streaming needs both decoupled)"))
    draft = models.get(bls_params.get("tensorrt_llm_draft_model_name", ""))
    if draft is not None and (draft.decoupled or bls.decoupled):
        issues.append(RepoIssue(bls.file, bls.line("decoupled"), "draft/target through the BLS cannot be "
                                "decoupled (batch 1, no streaming): set decoupled: false on the BLS and both "
                                "tensorrt_llm models"))
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
                issues.append(RepoIssue(model.file, line, f"KIND_GPU instance on GPU {bad} but the profile has "
                                        f"{gpus} GPU(s)"))
            elif not group.gpus and group.count > gpus:
                issues.append(RepoIssue(model.file, line, f"KIND_GPU count {group.count} exceeds the profile's "
                                        f"{gpus} GPU(s)"))
    return issues


def check_llmapi(root: Path, models: dict[str, Model], manifest: dict[str, Any]) -> list[RepoIssue]:
    """model.yaml's triton_config must say what config.pbtxt says (only one of them counts per launch style)."""
    issues = []
    for model in models.values():
        path = root / model.name / "1" / "model.yaml"
        if not path.is_file():
            continue
        file = f"{model.name}/1/model.yaml"
        text = path.read_text(encoding="utf-8")
        try:
            data = loads_yaml(text, file) or {}
        except InputError as exc:
            issues.append(RepoIssue(file, exc.line, exc.problem))
            continue
        if not isinstance(data, dict):
            issues.append(RepoIssue(file, None, f"must be a mapping, not a {type(data).__name__}"))
            continue
        triton = data.get("triton_config")
        if not isinstance(triton, dict) or "decoupled" not in triton:
            issues.append(RepoIssue(file, None, "triton_config.decoupled is missing (the model's initialize "
                                    "raises KeyError)"))
            continue
        line = next((n for n, s in enumerate(text.splitlines(), 1) if s.strip().startswith("decoupled:")), None)
        if bool(triton["decoupled"]) != model.decoupled:
            issues.append(RepoIssue(file, line, f"decoupled mismatch: model.yaml triton_config.decoupled is "
                                    f"{str(bool(triton['decoupled'])).lower()}, config.pbtxt says "
                                    f"{str(model.decoupled).lower()}"))
        if int(triton.get("max_batch_size", 0)) != model.config.max_batch_size:
            issues.append(RepoIssue(file, None, f"max_batch_size mismatch: model.yaml triton_config says "
                                    f"{triton.get('max_batch_size', 0)}, config.pbtxt {model.config.max_batch_size}"))
        world = int(data.get("tensor_parallel_size", 1)) * int(data.get("pipeline_parallel_size", 1))
        want = int(manifest.get("tensor_parallel", 1)) * int(manifest.get("pipeline_parallel", 1))
        if manifest and world != want:
            issues.append(RepoIssue(file, None, f"tensor_parallel_size x pipeline_parallel_size = {world}, the "
                                    f"profile's TP x PP is {want}"))
    return issues


def _engine_max_draft_len(model: Model, manifest: dict[str, Any]) -> int | None:
    """The engine's own config.json when it is there, else what the build recorded in the manifest."""
    engine = Path(params(model.config).get("gpt_model_path", "")) / "config.json"
    if engine.is_file():
        try:
            value = read_json(engine).get("build_config", {}).get("max_draft_len")
        except (InputError, OSError, AttributeError):  # unreadable: what the build recorded decides
            value = None
        if value is not None:
            return int(value)
    value = manifest.get("engine_max_draft_len")
    return None if value is None else int(value)


def check_draft_tokens(models: dict[str, Model], manifest: dict[str, Any]) -> list[RepoIssue]:
    """What the backend refuses at request time: more draft tokens than the engine was built for."""
    from specdeploy.plugin.registry import engine_for_layout

    target = models.get("tensorrt_llm")
    if target is None or "gpt_model_path" not in params(target.config):
        return []
    limit = _engine_max_draft_len(target, manifest)
    if limit is None:
        return []
    issues = []
    p = params(target.config)
    engine = engine_for_layout(str(manifest.get("layout", "engine")))
    needed = engine.repo_draft_len(p) if engine is not None else None  # what the mechanism's parameters ask
    if needed is not None and needed[0] > limit:
        count, what, key = needed
        issues.append(RepoIssue(target.file, target.line(f'"{key}"'), f"{what} needs {count} draft tokens, more "
                                f"than the engine's max_draft_len {limit}"))
    for key in ("medusa_choices", "eagle_choices"):
        count = p.get(key, "").count("{")
        if count > limit:
            issues.append(RepoIssue(target.file, target.line(f'"{key}"'), f"{key} has {count} nodes, more than "
                                    f"the engine's max_draft_len {limit}"))
    bls = models.get("tensorrt_llm_bls")
    requested = params(bls.config).get("num_draft_tokens", "0") if bls else "0"
    if bls and requested.isdigit() and int(requested) > limit:
        issues.append(RepoIssue(bls.file, bls.line('"num_draft_tokens" value'), f"Number of draft tokens "
                                f"({requested}) is larger than maximum number of draft tokens ({limit}) of the "
                                "tensorrt_llm engine"))
    for concurrency, k in (manifest.get("schedule") or {}).items():
        if int(k) > limit:
            issues.append(RepoIssue(MANIFEST_FILE, None, f"schedule asks for {k} draft tokens at concurrency "
                                    f"{concurrency}, more than the engine's max_draft_len {limit}"))
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
                issues.append(RepoIssue(model.file, line, f"gpu_device_ids group '{group}' has {len(members)} "
                                        f"GPU(s), TP x PP = {world}"))
            seen += members
        if gpus is not None and any(i >= gpus for i in seen):
            issues.append(RepoIssue(model.file, line, f"gpu_device_ids '{ids}' names a GPU beyond the profile's "
                                    f"{gpus}"))
        if len(seen) != len(set(seen)):
            issues.append(RepoIssue(model.file, line, f"gpu_device_ids '{ids}' uses a GPU twice"))
    return issues
