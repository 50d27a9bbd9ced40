"""Find a model's `config.json`: a local folder, the Hugging Face cache (offline), the hub, or the catalog.

The cache is read directly (refs/ + snapshots/), so `validate` and `plan` never import huggingface_hub.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specdeploy.boundedio import read_json
from specdeploy.resolve.catalog import CATALOG
from specdeploy.resolve.model_spec import ModelSpec, spec_from_config

_COMMIT = re.compile(r"^[0-9a-f]{40}$")


@dataclass(frozen=True)
class ConfigLookup:
    """The outcome of looking a model up: a spec, or why there is none."""

    spec: ModelSpec | None
    origin: str
    reason: str | None = None
    invalid: bool = False
    """The reference can never work (an empty name, a file, a config.json with impossible sizes): an error,
    where a model merely not found here only skips the model-dependent checks."""


def hub_cache_dir() -> Path:
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    home = Path(os.environ.get("HF_HOME", Path.home() / ".cache" / "huggingface"))
    return home / "hub"


def cached_snapshot(repo_id: str, revision: str | None) -> Path | None:
    """The snapshot folder of `repo_id` at `revision` in the local hub cache, if present."""
    repo = hub_cache_dir() / ("models--" + repo_id.replace("/", "--"))
    rev = revision or "main"
    try:  # a name the OS refuses (too long, a NUL byte) is simply not in the cache
        if _COMMIT.match(rev):
            commit = rev
        else:
            ref = repo / "refs" / rev
            if not ref.is_file():
                return None
            commit = ref.read_text().strip()
        snapshot = repo / "snapshots" / commit
        return snapshot if snapshot.is_dir() else None
    except (OSError, ValueError):
        return None


def _read(path: Path) -> dict[str, Any]:
    """A config.json; a Model-Optimizer export that states its quantization only in hf_quant_config.json beside it
    gets that folded in as `quantization_config` (model_spec.checkpoint_quantization reads it)."""
    data = read_json(path, constants=True)  # transformers writes and reads Infinity: its sizes are checked after
    if not isinstance(data, dict):
        raise ValueError(f"{path} is not a JSON object")
    side = path.with_name("hf_quant_config.json")
    if "quantization_config" not in data and side.is_file():
        extra = read_json(side)
        quant = extra.get("quantization") if isinstance(extra, dict) else None
        if isinstance(quant, dict):
            data["quantization_config"] = {"quant_method": "modelopt", **quant}
    return data


def _spec(name: str, config: dict[str, Any], origin: str) -> ConfigLookup:
    try:
        return ConfigLookup(spec_from_config(name, config, origin), origin)
    except ValueError as exc:
        return ConfigLookup(None, origin, str(exc), invalid=True)


def looks_local(ref: str) -> bool:
    """A reference only a local folder can be: `/x`, `./x`, `../x`, `~/x`, or more than one '/' (a hub id has at
    most one; specdeploy.profile.checks.model_ref)."""
    return ref.startswith(("/", "./", "../", "~")) or ref in (".", "..") or ref.count("/") > 1


def _local(ref: str) -> ConfigLookup | None:
    """The lookup for a local folder (or a local path that cannot be one); None when `ref` is no local path."""
    from specdeploy.runtime_paths import packaged_model

    if not ref.strip():
        return ConfigLookup(None, "none", "the model reference is empty", invalid=True)
    try:
        folder = packaged_model(ref) or Path(ref).expanduser()
        is_file = folder.exists() and not folder.is_dir()
    except (OSError, ValueError) as exc:  # ENAMETOOLONG, a NUL byte: neither a folder nor a hub id
        return ConfigLookup(
            None,
            "none",
            f"{ref[:80]!r}... is not a usable model reference ({exc.__class__.__name__}: "
            f"{getattr(exc, 'strerror', None) or exc})"[:300],
            invalid=True,
        )
    if is_file:
        return ConfigLookup(
            None, str(folder), f"{folder} is a file, not a model folder (one holding config.json)", invalid=True
        )
    if not folder.is_dir():
        if looks_local(ref):  # no hub id has this form: nothing else can be meant
            return ConfigLookup(None, str(folder), f"no folder {ref!r} ({folder.absolute()})", invalid=True)
        return None
    cfg = folder / "config.json"
    if not cfg.is_file():
        return ConfigLookup(
            None,
            str(folder),
            f"{ref!r} ({folder.absolute()}) has no config.json: not a model folder",
            invalid=looks_local(ref),
        )  # `org/name` may still mean the hub's
    try:
        return _spec(ref, _read(cfg), str(cfg))
    except (OSError, ValueError) as exc:
        return ConfigLookup(None, str(cfg), f"unreadable config.json: {exc}")


def lookup_config(ref: str, revision: str | None = None, *, online: bool = False) -> ConfigLookup:
    """Resolve `ref` (repo id or folder); `online` lets huggingface_hub fetch config.json (build only)."""
    local = _local(ref)
    if local is not None:
        return local
    snapshot = cached_snapshot(ref, revision)
    if snapshot is not None and (snapshot / "config.json").is_file():
        try:
            return _spec(ref, _read(snapshot / "config.json"), f"hf-cache:{snapshot.name[:12]}")
        except (OSError, ValueError) as exc:
            return ConfigLookup(None, str(snapshot), f"unreadable cached config.json: {exc}")
    if online:
        fetched = _fetch_online(ref, revision)
        if fetched is not None:
            return fetched
    if ref in CATALOG:
        config, source = CATALOG[ref]
        return _spec(ref, config, f"catalog ({source})")
    return ConfigLookup(
        None,
        "none",
        f"no config.json for '{ref}': not a local folder, not in the Hugging Face cache"
        f" ({hub_cache_dir()}), not in specdeploy's catalog",
    )


def _fetch_online(ref: str, revision: str | None) -> ConfigLookup | None:
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import HFValidationError, LocalEntryNotFoundError

    try:
        path = hf_hub_download(ref, "config.json", revision=revision)
    except (LocalEntryNotFoundError, HFValidationError, OSError):
        return None
    return _spec(ref, _read(Path(path)), f"hub:{ref}")
