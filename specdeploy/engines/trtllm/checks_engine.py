"""`check-repo`'s rules for the engine layout (triton_layouts.py `Engines.check`): what the C++ tensorrtllm
backend and its BLS refuse only at request time or not at all (streaming through the BLS, draft tokens over the
engine's max_draft_len, the seed's name, two engines sharing a GPU's KV cache, orchestrator mode).

Sources: triton-inference-server/tensorrtllm_backend @ c2e65b8 (TB) and NVIDIA/TensorRT-LLM `triton_backend/` (TL)
at the commit given per rule; docs/design/upstream-audit.md §B.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specdeploy.boundedio import InputError, read_json
from specdeploy.plugin.registry import engine_for_layout
from specdeploy.render.check_pbtxt import Model, RepoIssue, params
from specdeploy.render.check_rules import gpu_groups
from specdeploy.render.context import MANIFEST as MANIFEST_FILE

KV_KEY = "kv_cache_free_gpu_mem_fraction"


def check_decoupled(models: dict[str, Model]) -> list[RepoIssue]:
    """Streaming needs a decoupled tensorrt_llm AND a decoupled BLS; draft/target cannot stream at all."""
    issues = []
    bls = models.get("tensorrt_llm_bls")
    if bls is None:
        return []
    bls_params = params(bls.config)
    target = models.get(bls_params.get("tensorrt_llm_model_name") or "tensorrt_llm")
    if target is not None and target.decoupled != bls.decoupled:
        issues.append(
            RepoIssue(
                bls.file,
                bls.line("decoupled"),
                f"decoupled mismatch: tensorrt_llm_bls is "
                f"{str(bls.decoupled).lower()}, {target.name} is {str(target.decoupled).lower()} "
                "(streaming needs both decoupled)",
            )
        )
    draft = models.get(bls_params.get("tensorrt_llm_draft_model_name", ""))
    if draft is not None and (draft.decoupled or bls.decoupled):
        issues.append(
            RepoIssue(
                bls.file,
                bls.line("decoupled"),
                "draft/target through the BLS cannot be "
                "decoupled (batch 1, no streaming): set decoupled: false on the BLS and both "
                "tensorrt_llm models",
            )
        )
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
        issues.append(
            RepoIssue(
                target.file,
                target.line(f'"{key}"'),
                f"{what} needs {count} draft tokens, more than the engine's max_draft_len {limit}",
            )
        )
    for key in ("medusa_choices", "eagle_choices"):
        count = p.get(key, "").count("{")
        if count > limit:
            issues.append(
                RepoIssue(
                    target.file,
                    target.line(f'"{key}"'),
                    f"{key} has {count} nodes, more than the engine's max_draft_len {limit}",
                )
            )
    bls = models.get("tensorrt_llm_bls")
    requested = params(bls.config).get("num_draft_tokens", "0") if bls else "0"
    if bls and requested.isdigit() and int(requested) > limit:
        issues.append(
            RepoIssue(
                bls.file,
                bls.line('"num_draft_tokens" value'),
                f"Number of draft tokens "
                f"({requested}) is larger than maximum number of draft tokens ({limit}) of the "
                "tensorrt_llm engine",
            )
        )
    for concurrency, k in (manifest.get("schedule") or {}).items():
        if int(k) > limit:
            issues.append(
                RepoIssue(
                    MANIFEST_FILE,
                    None,
                    f"schedule asks for {k} draft tokens at concurrency "
                    f"{concurrency}, more than the engine's max_draft_len {limit}",
                )
            )
    return issues


def _trtllm(models: dict[str, Model]) -> list[Model]:
    return [m for m in models.values() if m.config.backend == "tensorrtllm"]


def check_engine_upstream(models: dict[str, Model], manifest: dict[str, Any]) -> list[RepoIssue]:
    """The seed's name, the KV cache two models on one GPU share, orchestrator mode for two engines."""
    engines = _trtllm(models)
    # the seed's name matters where it reaches the C++ backend; the reference layout's own python model also
    # takes vLLM's `random_seed` (specdeploy/serve/llm_inputs.py)
    seeded = [m for m in models.values() if engines and any(t.name == "random_seed" for t in m.config.input)]
    issues = [
        RepoIssue(
            m.file,
            m.line('"random_seed"'),
            "input random_seed: the tensorrtllm backend reads only "
            "`seed` (TB inflight_batcher_llm/src/utils.h:97), so the seed would be dropped silently; "
            "rename it to seed",
        )
        for m in seeded
    ]
    for i, first in enumerate(engines):
        for second in engines[i + 1 :]:
            issues += _shared_kv(first, second)
    env = (manifest.get("server_env") or {}) if manifest else None
    if len(engines) > 1 and env is not None and env.get("TRTLLM_ORCHESTRATOR") != "1":
        names = ", ".join(m.name for m in engines)
        issues.append(
            RepoIssue(
                MANIFEST_FILE,
                None,
                f"{len(engines)} tensorrtllm models ({names}) need "
                "orchestrator mode: server_env TRTLLM_ORCHESTRATOR=1 (launch_triton_server.py "
                "--multi-model; TB model_instance_state.cc:247-253)",
            )
        )
    return issues


def _shared_kv(first: Model, second: Model) -> list[RepoIssue]:
    """Two engines on a common GPU: their KV fractions must fit in it together."""
    a, b = params(first.config), params(second.config)
    gpus_a = set().union(*gpu_groups(a.get("gpu_device_ids", "") or "0"))
    gpus_b = set().union(*gpu_groups(b.get("gpu_device_ids", "") or "0"))
    try:
        total = float(a.get(KV_KEY) or 0.9) + float(b.get(KV_KEY) or 0.9)  # the backend's default is 0.9
    except ValueError:
        return []
    if not gpus_a & gpus_b or total <= 1.0:
        return []
    return [
        RepoIssue(
            second.file,
            second.line(f'"{KV_KEY}"'),
            f"{first.name} and {second.name} share GPU(s) "
            f"{sorted(gpus_a & gpus_b)} but their {KV_KEY} add up to {total:g} (> 1): split it, e.g. "
            "0.45 each (TL examples/draft_target_model/README.md @ 11925f6 uses 0.5 each)",
        )
    ]
