"""`check-repo`'s rules for the llmapi layout (triton_layouts.py `LlmApi.check`): Triton's `tensorrt_llm` python
model around LLM() reads model.yaml, so model.yaml must agree with config.pbtxt, name the checkpoint and pass the
contract table of the release the repository was rendered for.

Sources: triton-inference-server/tensorrtllm_backend @ c2e65b8 (TB) and NVIDIA/TensorRT-LLM `triton_backend/` (TL)
at the commit given per rule; docs/design/upstream-audit.md §B.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specdeploy.boundedio import InputError, loads_yaml
from specdeploy.plugin.registry import engine_for_layout
from specdeploy.render.check_pbtxt import Model, RepoIssue, params
from specdeploy.render.check_rules import instance_count


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
            issues.append(
                RepoIssue(file, None, "triton_config.decoupled is missing (the model's initialize raises KeyError)")
            )
            continue
        line = next((n for n, s in enumerate(text.splitlines(), 1) if s.strip().startswith("decoupled:")), None)
        if bool(triton["decoupled"]) != model.decoupled:
            issues.append(
                RepoIssue(
                    file,
                    line,
                    f"decoupled mismatch: model.yaml triton_config.decoupled is "
                    f"{str(bool(triton['decoupled'])).lower()}, config.pbtxt says "
                    f"{str(model.decoupled).lower()}",
                )
            )
        if int(triton.get("max_batch_size", 0)) != model.config.max_batch_size:
            issues.append(
                RepoIssue(
                    file,
                    None,
                    f"max_batch_size mismatch: model.yaml triton_config says "
                    f"{triton.get('max_batch_size', 0)}, config.pbtxt {model.config.max_batch_size}",
                )
            )
        world = int(data.get("tensor_parallel_size", 1)) * int(data.get("pipeline_parallel_size", 1))
        want = int(manifest.get("tensor_parallel", 1)) * int(manifest.get("pipeline_parallel", 1))
        if manifest and world != want:
            issues.append(
                RepoIssue(
                    file,
                    None,
                    f"tensor_parallel_size x pipeline_parallel_size = {world}, the profile's TP x PP is {want}",
                )
            )
    return issues


def _llm_args(file: str, data: dict[str, Any], release: str | None) -> list[RepoIssue]:
    """model.yaml's LLM() arguments against the contract table of the release the repository was rendered for."""
    if not release:
        return []  # rendered before the manifest recorded it
    args = {k: v for k, v in data.items() if k != "triton_config"}
    engine = engine_for_layout("llmapi")
    if engine is None:
        return []
    return [
        RepoIssue(file, None, f"LLM() argument {problem.lstrip('.')} ({engine.product} {release})")
        for problem in engine.check_serving_args(args, release)
    ]


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
            issues.append(
                RepoIssue(
                    file,
                    None,
                    "no `model:` (the checkpoint folder or hub id): LLM(model, ...) "
                    "has no default, so the model never loads (TB "
                    "all_models/llmapi/tensorrt_llm/1/model.yaml:4)",
                )
            )
        if isinstance(data, dict):
            issues += _llm_args(file, data, manifest.get("trtllm_version"))
        stop = next((t for t in model.config.input if t.name == "sampling_param_stop"), None)
        if stop is not None and list(stop.dims) != [-1]:
            issues.append(
                RepoIssue(
                    model.file,
                    model.line('"sampling_param_stop"'),
                    f"sampling_param_stop dims "
                    f"{list(stop.dims)}: a list of stop strings is dims [-1] (TL "
                    "all_models/llmapi/tensorrt_llm/config.pbtxt @ 0a71057)",
                )
            )
        count, ids = instance_count(model), params(model.config).get("gpu_device_ids", "")
        if count > 1 and not ids:
            issues.append(
                RepoIssue(
                    model.file,
                    model.line("instance_group"),
                    f"{count} instances but no "
                    "gpu_device_ids: every instance would load the LLM on the same GPUs (TL "
                    "llmapi model.py @ 044a90d refuses this)",
                )
            )
    return issues
