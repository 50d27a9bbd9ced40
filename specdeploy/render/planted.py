"""What a rendered repository must not hold, whoever put it there: `check-repo` reports it, and `serve` refuses
a repository that is not a built artifact (a built one is held to its manifest by `verify`) when it holds any.

Render writes `<model>/config.pbtxt` and `<model>/1/...` for each model its manifest names, and nothing else.
Triton serves the highest numbered version folder (version_policy `latest`, num_versions 1: server
docs/user_guide/model_configuration.md @ v2.51.0, "Version Policy"), so a planted `2/` replaces the rendered
model; the python stub puts the model folder and its version folder on `sys.path` and prefers a
`triton_python_backend_stub` in the model folder to the backend's (python_backend src/pb_stub.cc and
src/stub_launcher.cc @ r24.10); Triton looks for a backend library in the version and model folders before the
backend directory (triton-inference-server/backend README.md @ r24.10, "Backend Shared Library"); and Python runs a
`__pycache__/*.pyc` whose header carries the source's mtime and size instead of the source.
"""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

from specdeploy.boundedio import InputError, read_json, walk
from specdeploy.render.check_pbtxt import RepoIssue
from specdeploy.render.context import MANIFEST, VERSION


def repo_manifest(root: Path) -> tuple[dict[str, Any], list[str] | None, list[RepoIssue]]:
    """The repository manifest (empty when absent), the model names it lists (None: it names none it can be
    trusted for) and what is wrong with it. A FIFO or device in its place is never opened."""
    path = root / MANIFEST
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return {}, None, []
    except OSError as exc:
        return {}, None, [RepoIssue(MANIFEST, None, f"unreadable: {exc.strerror or exc}")]
    if not stat.S_ISREG(mode):
        return {}, None, [RepoIssue(MANIFEST, None, "not a regular file: the models it names are unknown")]
    try:
        manifest = read_json(path)
    except InputError as exc:
        return {}, None, [RepoIssue(MANIFEST, exc.line, f"not readable: {exc.problem}", exc.col)]
    except OSError as exc:
        return {}, None, [RepoIssue(MANIFEST, None, f"unreadable: {exc.strerror or exc}")]
    if not isinstance(manifest, dict):
        return {}, None, [RepoIssue(MANIFEST, None, f"must be a JSON object, not a {type(manifest).__name__}")]
    listed = manifest.get("models")
    if listed is None:
        return manifest, None, []
    if not isinstance(listed, list) or not all(isinstance(m, str) for m in listed):
        return manifest, None, [RepoIssue(MANIFEST, None, f"`models` is not a list of model names ({listed!r:.40})")]
    return manifest, listed, []


def planted(root: Path, listed: list[str] | None) -> list[RepoIssue]:
    """Every entry render would not have written: model folders the manifest does not name (`listed` None: not
    checked), version folders but `1/`, other entries beside config.pbtxt, bytecode, links and special files."""
    issues: list[RepoIssue] = []
    for entry in sorted(root.iterdir()):
        if entry.name.startswith("."):
            continue
        if entry.is_symlink() or not (entry.is_dir() or entry.is_file()):
            issues += [] if entry.name == MANIFEST else _odd(root, entry)  # repo_manifest reports that one
            continue
        if entry.is_file():  # Triton reads only folders at the top
            continue
        if listed is not None and entry.name not in listed:
            issues.append(
                RepoIssue(
                    entry.name, None, f"model folder not named in {MANIFEST}: not rendered by specdeploy, never served"
                )
            )
            continue
        issues += _model_folder(root, entry)
    return issues


def _model_folder(root: Path, folder: Path) -> list[RepoIssue]:
    issues = []
    for entry in sorted(folder.iterdir()):
        rel = entry.relative_to(root).as_posix()
        if entry.is_symlink() or not (entry.is_dir() or entry.is_file()):
            issues += _odd(root, entry)
        elif entry.name == VERSION and entry.is_dir():
            issues += _tree(root, entry)
        elif entry.is_dir() and entry.name.isdigit():
            issues.append(
                RepoIssue(
                    rel,
                    None,
                    f"version folder {entry.name}/ not rendered by specdeploy (it "
                    f"renders {VERSION}/ only): Triton would serve the highest version",
                )
            )
        elif entry.name != "config.pbtxt":
            issues.append(
                RepoIssue(
                    rel,
                    None,
                    f"not rendered by specdeploy (a model folder holds config.pbtxt and "
                    f"{VERSION}/): Triton and the python stub load backends and modules from here",
                )
            )
    return issues


def _tree(root: Path, top: Path) -> list[RepoIssue]:
    """Bytecode, links and special files anywhere under `top` (links are reported, never followed)."""
    issues = []
    for path in sorted(walk(top)):  # a stack, not recursion: a planted tree may be thousands of folders deep
        if "__pycache__" in path.relative_to(top).parts[:-1]:
            continue  # the folder itself is reported
        if path.is_symlink() or not (path.is_dir() or path.is_file()):
            issues += _odd(root, path)
        elif path.name == "__pycache__" or path.name.endswith(".pyc"):
            issues.append(
                RepoIssue(
                    path.relative_to(root).as_posix(),
                    None,
                    "Python bytecode: an import runs "
                    "it instead of the source beside it when its header matches the source's "
                    "mtime and size; render writes none",
                )
            )
    return issues


def _odd(root: Path, path: Path) -> list[RepoIssue]:
    rel = path.relative_to(root).as_posix()
    if path.is_symlink():
        try:
            path.resolve(strict=True)
        except (OSError, RuntimeError):
            return [
                RepoIssue(
                    rel, None, "a symbolic link that resolves nowhere (a loop, or dangling): render writes no links"
                )
            ]
        return [
            RepoIssue(
                rel,
                None,
                f"a symbolic link (to {path.readlink()}): render writes no links, and "
                "Triton would follow it out of the repository",
            )
        ]
    return [RepoIssue(rel, None, "not a regular file or folder (a FIFO, socket or device)")]
