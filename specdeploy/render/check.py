"""check_repo: Triton's load-time rules (docs/design/triton.md §6) and specdeploy's own, on a repository folder,
offline.

Everything Triton would refuse at load time, and what the backends only refuse at request time (GPU ids that do
not match TP x PP here; draft tokens over the engine's max_draft_len and the like in each layout's
`TritonLayout.check`), reported with file:line.
"""

from __future__ import annotations

from pathlib import Path

from specdeploy.boundedio import walk
from specdeploy.execute.portable import HUB_CACHE_REF  # the one variable a repository may name
from specdeploy.plugin.registry import triton_layouts
from specdeploy.render.check_pbtxt import RepoIssue, load_models
from specdeploy.render.check_rules import check_ensembles, check_instance_groups, check_instances, check_parallel


def _placeholders(root: Path) -> list[RepoIssue]:
    issues = []
    for path in sorted(p for p in walk(root) if p.is_file()):
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            line = line.replace(HUB_CACHE_REF, "")  # the serving host's hub cache: the rendered model resolves it
            if "${" in line:
                issues.append(
                    RepoIssue(
                        str(path.relative_to(root)),
                        number,
                        f"unfilled placeholder {line[line.index('${') :].split('}')[0]}}}",
                    )
                )
    return issues


def check_repo(root: Path, *, gpus: int | None = None) -> list[RepoIssue]:
    """Every problem found in the repository at `root` (empty = good). `gpus` overrides the manifest's count."""
    from specdeploy.render.planted import planted, repo_manifest

    root = Path(root)
    manifest, listed, issues = repo_manifest(root)  # a bad manifest is a problem, and planted folders still are
    if gpus is not None:
        manifest = {**manifest, "gpus": gpus}
    issues += planted(root, listed) + _placeholders(root)
    models, found = load_models(root)
    issues += found
    if any(i.file.endswith("config.pbtxt") and i.line for i in found if "name '" not in i.message):
        return issues  # a config that does not parse: cross-model rules would only report its absence
    issues += check_ensembles(models)
    issues += check_instances(models, manifest)
    issues += check_parallel(models, manifest)
    issues += check_instance_groups(models)
    for layout in triton_layouts():  # each layout's backends, on the models that are theirs
        issues += layout.check(root, models, manifest)
    return issues
