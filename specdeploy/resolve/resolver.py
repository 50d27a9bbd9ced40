"""Resolve a loaded profile into facts (model specs, GPU, version line, memory fit) and check every rule."""

from __future__ import annotations

from typing import TYPE_CHECKING

from specdeploy.issues import Issue, Path, ProfileError
from specdeploy.plugin.base import CheckContext
from specdeploy.plugin.registry import get_engine
from specdeploy.profile.loader import LoadedProfile
from specdeploy.profile.rules import check_rules, draft_len_candidates, planned_draft_len
from specdeploy.resolve.gpus import GpuSpec
from specdeploy.resolve.hub import lookup_config
from specdeploy.resolve.memory import memory_fit
from specdeploy.resolve.resolved import Resolved
from specdeploy.resolve.user_gpu import named_gpu

if TYPE_CHECKING:  # probing is for build and doctor; validate and plan take no probe
    from specdeploy.resolve.probe import EnvironmentProbe


MODEL_HINT = "name a folder holding config.json, or a Hugging Face repo id (org/name)"


def _given_at(loaded: LoadedProfile, path: Path) -> str:
    """file:line (or --set) of the value at `path`, else of the keys given under it (`--set path.key=...`)."""
    found = loaded.source_of(path)
    if found == "default":
        found = ", ".join(dict.fromkeys(loaded.source_of(p) for p in loaded.origins if p[: len(path)] == path))
    return found


def _gpu(loaded: LoadedProfile, probe: EnvironmentProbe | None) -> tuple[GpuSpec | None, list[Issue]]:
    """The GPU the profile names or describes, else the one `auto` detects, else a note why there is none."""
    hardware = loaded.profile.hardware
    if hardware.gpu != "auto":
        return named_gpu(hardware, _given_at(loaded, ("hardware", "gpu_spec"))), []
    if probe is None:
        return None, [
            Issue(
                ("hardware", "gpu"),
                "gpu: auto is detected at build time; GPU-dependent checks (memory fit, FP8 support) skipped",
                severity="skipped",
            )
        ]
    spec = probe.gpu_spec()
    if spec is None:
        why = probe.nvml_error or f"unknown GPU {probe.gpu_names[0]!r}" if probe.gpu_names else probe.nvml_error
        return None, [
            Issue(
                ("hardware", "gpu"),
                f"gpu: auto found no usable GPU ({why or 'none detected'})",
                "name the GPU (e.g. gpu: h200), or describe it in hardware.gpu_spec",
                severity="skipped",
            )
        ]
    return spec, []


def resolve(loaded: LoadedProfile, *, probe: EnvironmentProbe | None = None, online: bool = False) -> Resolved:
    """All rules at once; raise ProfileError with every located error, keep warnings in `notes`."""
    profile = loaded.profile
    notes: list[Issue] = []
    engine = get_engine(profile.runtime.backend)
    online = online and not engine.local_models  # the reference runtime's models ship locally
    invalid: list[Issue] = []
    target = lookup_config(profile.target.model, profile.target.revision, online=online)
    if target.invalid:
        invalid.append(Issue(("target", "model"), str(target.reason), MODEL_HINT))
    elif target.spec is None:
        notes.append(
            Issue(
                ("target", "model"),
                f"model-dependent checks skipped: {target.reason}",
                "pass a local folder, or pre-fill the Hugging Face cache",
                severity="skipped",
            )
        )
    draft = None
    if profile.speculative.draft_model is not None:
        draft = lookup_config(profile.speculative.draft_model, profile.speculative.draft_revision, online=online)
        if draft.invalid:
            invalid.append(Issue(("speculative", "draft_model"), str(draft.reason), MODEL_HINT))
        elif draft.spec is None:
            notes.append(
                Issue(("speculative", "draft_model"), f"drafter checks skipped: {draft.reason}", severity="skipped")
            )
    gpu, gpu_notes = _gpu(loaded, probe)
    notes.extend(gpu_notes)
    line = engine.release_line(profile)
    ctx = CheckContext(
        profile,
        loaded.options,
        target.spec,
        draft.spec if draft else None,
        line,
        gpu,
        given=lambda path: loaded.source_of(path) != "default",
    )
    issues = [*invalid, *loaded.pending, *check_rules(ctx, loaded.mechanism)]
    k = planned_draft_len(ctx, loaded.mechanism)
    serving = profile.serving
    fit = None
    if target.spec is not None and gpu is not None:
        fit = memory_fit(
            target.spec,
            draft.spec if draft else None,
            gpu,
            quantization=profile.target.quantization,
            tp=profile.hardware.tensor_parallel,
            pp=profile.hardware.pipeline_parallel,
            max_batch=serving.max_batch_size,
            max_seq=serving.max_seq_len,
            kv_fraction=serving.kv_cache_free_gpu_memory_fraction,
            has_draft=draft is not None,
            kv_fp8=engine.kv_cache_fp8(profile),
        )
        problem = fit.problem()
        if problem is not None:
            severity, message, hint = problem
            path = ("serving", "max_batch_size") if fit.weights_fit else ("hardware", "tensor_parallel")
            issues.append(Issue(path, message, hint, severity="error" if severity == "error" else "warning"))
    errors = [i for i in issues if i.severity == "error"]
    if errors:
        located = [i if i.file else loaded.locate(i) for i in errors]
        raise ProfileError(sorted(located, key=lambda i: (i.file != "--set", i.file or "", i.line or 0, i.col or 0)))
    notes.extend(i for i in issues if i.severity != "error")
    max_num_tokens = serving.max_num_tokens or max(8192, serving.max_batch_size * (1 + k))
    auto = profile.speculative.draft_len == "auto" and profile.speculative.schedule is None
    draft_lens = draft_len_candidates(profile, loaded.mechanism) if auto else ()
    clamp = engine.schedule_clamp(line) if draft_lens and line is not None else None
    return Resolved(
        loaded,
        target,
        draft,
        gpu,
        line,
        fit,
        k,
        max_num_tokens,
        tuple(loaded.locate(n) for n in notes),
        draft_lens,
        clamp,
    )
