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

from specdeploy.engines.vllm.selfcheck import config_folder
from specdeploy.errors import UsageError

LAYOUT = 2
"""Bump when what an export writes changes: the cache key changes with it."""
LINKED = ("model.safetensors", "chat_template.jinja")
"""What a folder links from the converted target besides what selfcheck.config_folder copies (config.json less the
GGUF `quantization_config` vLLM refuses, tokenizer files)."""
TOKENIZER = ("tokenizer.json", "tokenizer_config.json", "generation_config.json", "chat_template.jinja")
"""What the draft-model folder links from the exported target."""


def export(ref: str) -> Path:
    """The vLLM folder for a model reference: the SmolLM2 target, a shipped drafter, or a local folder as it is."""
    from specdeploy.engines.reference.runtime.models import DRAFTER_REF, HEAD_REF, SMOLLM2_REF

    if ref == SMOLLM2_REF:
        return target_folder()
    if ref == DRAFTER_REF:
        return draft_model_folder()
    if ref == HEAD_REF:
        return eagle3_folder()
    path = Path(ref).expanduser()
    if not (path / "config.json").is_file():
        raise UsageError(
            f"no model folder with a config.json at {ref}",
            hint=f"use {SMOLLM2_REF}, {DRAFTER_REF}, {HEAD_REF} or a local Hugging Face folder",
        )
    return path


def target_folder() -> Path:
    """SmolLM2-135M-Instruct as the reference runtime converts it, with a config vLLM reads as unquantized."""
    from specdeploy.engines.reference.runtime.models import SMOLLM2_REF, resolve_target_folder

    source = resolve_target_folder(SMOLLM2_REF)

    def fill(tmp: Path) -> None:
        config_folder(source, tmp)
        _link(source, tmp, LINKED)

    return _cached("smollm2-135m-instruct", [source.name], fill)


def draft_model_folder() -> Path:
    """The shipped 3-layer drafter as a whole LlamaForCausalLM (vLLM's `draft_model` method loads one).

    It borrows the target's embedding, and its LM head is the target's cut to its draft vocabulary. vLLM's draft
    model scores the whole vocabulary, so the head keeps the target's rows of the draft vocabulary and zero rows
    elsewhere: those score 0, so the draft is the reference runtime's whenever the best in-vocabulary logit is
    positive."""
    from specdeploy.engines.reference.runtime.models import DRAFTER_DIR
    from specdeploy.engines.reference.runtime.shared_drafter import DRAFT_VOCAB_KEY

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
        config_folder(DRAFTER_DIR, tmp)
        config = _config(tmp) | {"tie_word_embeddings": False, "dtype": "float32"}
        (tmp / "config.json").write_text(json.dumps(config, indent=1), encoding="utf-8")
        _link(target, tmp, TOKENIZER)

    return _cached("smollm2-135m-drafter", [target.name, *_digests(DRAFTER_DIR)], fill)


def eagle3_folder() -> Path:
    """The shipped EAGLE head in vLLM 0.32's eagle3 layout (eagle3_layout.py says how and where it is exact)."""
    from specdeploy.engines.reference.runtime.models import HEAD_REF
    from specdeploy.engines.vllm.eagle3_layout import write_eagle3
    from specdeploy.runtime_paths import packaged_model

    source = packaged_model(HEAD_REF)
    assert source is not None, "the EAGLE head ships with specdeploy"
    target = target_folder()
    return _cached(
        "smollm2-135m-eagle3",
        [target.name, *_digests(source)],
        lambda tmp: write_eagle3(source, _target_embedding(target), _config(target), tmp),
    )


def _cached(stem: str, parts: list[str], fill: Callable[[Path], None]) -> Path:
    from specdeploy.engines.reference.runtime.models import publish_folder
    from specdeploy.runtime_paths import cache_dir

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


def _link(source: Path, folder: Path, names: tuple[str, ...]) -> None:
    for name in names:
        if (source / name).exists():
            (folder / name).symlink_to((source / name).resolve())


def _target_embedding(target: Path) -> Any:
    """The target's token embedding (fp32), which is also its LM head (tied)."""
    from safetensors import safe_open

    with safe_open(str(target / "model.safetensors"), framework="pt") as handle:
        return handle.get_tensor("model.embed_tokens.weight").float()
