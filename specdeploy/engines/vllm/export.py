"""The models specdeploy ships, as folders vLLM loads: SmolLM2 as a plain Hugging Face folder, the 3-layer drafter
as a draft-model folder, the EAGLE head in vLLM's eagle3 layout (eagle3_layout.py).

Each folder is built once per content: its name carries a hash of what it was made from (the target folder's
GGUF-keyed name, the drafter's files, LAYOUT), under the specdeploy cache. Runs in specdeploy's own environment
(torch, safetensors); vLLM only ever reads the result.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from specdeploy.errors import UsageError

LAYOUT = 1
"""Bump when what an export writes changes: the cache key changes with it."""
TARGET_FILES = ("model.safetensors", "tokenizer.json", "tokenizer_config.json", "chat_template.jinja",
                "generation_config.json")
DROPPED_KEYS = ("quantization_config", "_name_or_path", "_model_name_or_path")
"""The converted SmolLM2 config still names its GGUF source; vLLM reads a `quantization_config` as the method to
load the weights with (`vllm/config/model.py @ v0.32.0`, `_verify_quantization`), but the folder holds plain fp32."""


def export(ref: str) -> Path:
    """The vLLM folder for a model reference: the SmolLM2 target, a shipped drafter, or a local folder as it is."""
    from specdeploy.runtime.models import DRAFTER_REF, EAGLE_REF, SMOLLM2_REF

    if ref == SMOLLM2_REF:
        return target_folder()
    if ref == DRAFTER_REF:
        return draft_model_folder()
    if ref == EAGLE_REF:
        return eagle3_folder()
    path = Path(ref).expanduser()
    if not (path / "config.json").is_file():
        raise UsageError(f"no model folder with a config.json at {ref}",
                         hint=f"use {SMOLLM2_REF}, {DRAFTER_REF}, {EAGLE_REF} or a local Hugging Face folder")
    return path


def target_folder() -> Path:
    """SmolLM2-135M-Instruct as the reference runtime converts it, with a config vLLM reads as unquantized."""
    from specdeploy.runtime.models import SMOLLM2_REF, resolve_target_folder

    source = resolve_target_folder(SMOLLM2_REF)

    def fill(tmp: Path) -> None:
        _write_config(tmp, _config(source), {})
        for name in TARGET_FILES:
            if (source / name).is_file():
                (tmp / name).symlink_to(source / name)

    return _cached("smollm2-135m-instruct", [source.name], fill)


def draft_model_folder() -> Path:
    """The shipped 3-layer drafter as a whole LlamaForCausalLM (vLLM's `draft_model` method loads one).

    It borrows the target's embedding, and its LM head is the target's cut to its draft vocabulary. vLLM's draft
    model scores the whole vocabulary, so the head keeps the target's rows of the draft vocabulary and zero rows
    elsewhere: those score 0, so the draft is the reference runtime's whenever the best in-vocabulary logit is
    positive."""
    from specdeploy.runtime.models import DRAFT_VOCAB_KEY, DRAFTER_DIR

    target = target_folder()

    def fill(tmp: Path) -> None:
        import torch
        from safetensors.torch import load_file, save_file

        own = load_file(str(DRAFTER_DIR / "model.safetensors"))
        ids = own.pop(DRAFT_VOCAB_KEY).to(torch.long)
        embed = _target_embedding(target)
        head = torch.zeros_like(embed)
        head[ids] = embed[ids]
        state = {k: v.to(torch.float32).contiguous() for k, v in own.items()}
        state.update({"model.embed_tokens.weight": embed, "lm_head.weight": head})
        save_file(state, str(tmp / "model.safetensors"), metadata={"format": "pt"})
        _write_config(tmp, _config(DRAFTER_DIR), {"tie_word_embeddings": False, "dtype": "float32"})
        _link_tokenizer(target, tmp)

    return _cached("smollm2-135m-drafter", [target.name, *_digests(DRAFTER_DIR)], fill)


def eagle3_folder() -> Path:
    """The shipped EAGLE head in vLLM 0.32's eagle3 layout (eagle3_layout.py says how and where it is exact)."""
    from specdeploy.engines.vllm.eagle3_layout import write_eagle3
    from specdeploy.runtime.models import EAGLE_REF
    from specdeploy.runtime_paths import packaged_model

    source = packaged_model(EAGLE_REF)
    assert source is not None, "the EAGLE head ships with specdeploy"
    target = target_folder()
    return _cached("smollm2-135m-eagle3", [target.name, *_digests(source)],
                   lambda tmp: write_eagle3(source, _target_embedding(target), _config(target), tmp))


def _cached(stem: str, parts: list[str], fill: Callable[[Path], None]) -> Path:
    from specdeploy.runtime.models import cache_dir, publish_folder

    key = hashlib.sha256(json.dumps([LAYOUT, stem, *parts]).encode()).hexdigest()[:16]
    final = cache_dir() / "vllm" / f"{stem}-{key}"
    if (final / "config.json").is_file():
        return final
    return publish_folder(final, fill)


def _digests(folder: Path) -> list[str]:
    from specdeploy.execute.hashing import sha256_file

    return [f"{p.name}:{sha256_file(p)}" for p in sorted(folder.iterdir()) if p.is_file()]


def _config(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    return data


def _write_config(folder: Path, config: dict[str, Any], changes: dict[str, Any]) -> None:
    clean = {k: v for k, v in config.items() if k not in DROPPED_KEYS}
    (folder / "config.json").write_text(json.dumps({**clean, **changes}, indent=2) + "\n", encoding="utf-8")


def _link_tokenizer(target: Path, folder: Path) -> None:
    for name in TARGET_FILES[1:]:
        if (target / name).exists():
            (folder / name).symlink_to((target / name).resolve())


def _target_embedding(target: Path) -> Any:
    """The target's token embedding (fp32), which is also its LM head (tied)."""
    from safetensors import safe_open

    with safe_open(str(target / "model.safetensors"), framework="pt") as handle:
        return handle.get_tensor("model.embed_tokens.weight").float()
