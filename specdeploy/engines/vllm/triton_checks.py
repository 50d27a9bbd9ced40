"""`check-repo`'s rules for the vllm layout (triton_layout.py `VllmLayout.check`): what Triton's vLLM backend needs
to run, which Triton's own load does not enforce. Source: triton-inference-server/vllm_backend src/model.py
@ r24.10 (VB; tables/triton-vllm-r24.10.json).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specdeploy.boundedio import InputError, read_json
from specdeploy.plugin.registry import engine_for_layout
from specdeploy.render.check_pbtxt import Model, RepoIssue


def check_vllm_upstream(root: Path, models: dict[str, Model], manifest: dict[str, Any]) -> list[RepoIssue]:
    """A vLLM backend model: decoupled, a model.json that names the model and passes the release's table, and a
    multi-GPU engine on KIND_MODEL."""
    issues = []
    for model in (m for m in models.values() if m.config.backend == "vllm"):
        if not model.decoupled:
            issues.append(
                RepoIssue(
                    model.file,
                    model.line("decoupled"),
                    "the vLLM backend needs a decoupled model: its initialize asserts it (VB init_engine)",
                )
            )
        file = f"{model.name}/1/model.json"
        try:
            args = read_json(root / file)
        except (OSError, InputError) as exc:
            why = exc.detail if isinstance(exc, InputError) else (exc.strerror or exc)
            issues.append(RepoIssue(file, None, f"unreadable: {why} (the backend json.loads it, VB init_engine)"))
            continue
        if not isinstance(args, dict) or not args.get("model"):
            issues.append(
                RepoIssue(
                    file,
                    None,
                    "no `model` (a hub id or folder): vLLM would load its own default "
                    "model (VB: AsyncEngineArgs(**model.json))",
                )
            )
            continue
        engine, release = engine_for_layout("vllm"), manifest.get("vllm_version")
        if engine is not None and release:
            issues += [
                RepoIssue(file, None, f"AsyncEngineArgs {problem} ({engine.product} {release})")
                for problem in engine.check_serving_args(args, str(release))
            ]
        gpu = [g for g in model.config.instance_group if g.kind == 1]  # KIND_GPU
        if gpu and int(args.get("tensor_parallel_size", 1)) > 1:
            issues.append(
                RepoIssue(
                    model.file,
                    model.line("instance_group"),
                    "KIND_GPU with tensor_parallel_size "
                    "> 1: the vLLM backend refuses it (KIND_MODEL for multi-GPU models, VB "
                    "validate_device_config)",
                )
            )
    return issues
