"""PyTorch-backend emission: the LLM-API options dict (`--extra_llm_api_options` / Triton `model.yaml`).

Pure functions of a Resolved profile; every key is spelled through the version line (versions.py)
and checked against the contract table in tests (tables.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from specdeploy.engines.trtllm.declare import decoding_of
from specdeploy.engines.trtllm.schedule import emit_schedule
from specdeploy.engines.trtllm.versions import AUTO_DECODING, ONE_MODEL_K, VersionLine
from specdeploy.issues import Issue, ProfileError
from specdeploy.resolve.resolved import Resolved
from specdeploy.schedule import canonical


def _speculative_config(resolved: Resolved, line: VersionLine, k: int, draft_path: str | None) -> dict[str, Any]:
    """`decoding_type` and the keys the mechanism declares for this range (`declare.TrtllmDecoding`)."""
    mech, opts = resolved.profile.speculative.mechanism, resolved.loaded.options
    if mech == "auto":
        return {"decoding_type": AUTO_DECODING}
    declared = decoding_of(mech)
    if declared is None or not declared.has(line):
        raise ProfileError(
            [
                Issue(
                    ("speculative", "mechanism"),
                    f"{mech} is not in TensorRT-LLM {line.range} (see specdeploy mechanisms)",
                )
            ]
        )
    refused = declared.refusal(opts, line)
    if refused is not None:  # validate reports it too: only an unvalidated profile gets here
        raise ProfileError([refused])
    cfg: dict[str, Any] = {"decoding_type": declared.spelling(line)}
    if declared.length_keys is not None:  # the target drafts: K under its own keys, no drafter path
        cfg.update(dict.fromkeys(declared.length_keys(line), k))
    else:
        cfg["max_draft_len"] = k
        if draft_path is not None:
            cfg[line.drafter_path_key] = draft_path
    if declared.fields is not None:
        cfg.update(declared.fields(opts, line))
    return cfg


def _overlap(resolved: Resolved) -> bool:
    """Whether the overlap scheduler may stay on (the mechanism declares where its drafter path forbids it)."""
    declared = decoding_of(resolved.profile.speculative.mechanism)
    return declared is None or declared.overlap(resolved.loaded.options)


def _graph_batch_sizes(max_batch: int, bounds: Sequence[int]) -> list[int]:
    """Powers of two up to the max batch, the max batch, and every schedule boundary (one graph each)."""
    sizes = {max_batch, *(b for b in bounds if 1 <= b <= max_batch)}
    power = 1
    while power <= max_batch:
        sizes.add(power)
        power *= 2
    return sorted(sizes)


def _limits(resolved: Resolved, k: int) -> dict[str, Any]:
    """Batch/token/sequence limits, dtype, parallelism and KV cache: the keys every mechanism shares."""
    profile = resolved.profile
    serving, batch = profile.serving, profile.serving.max_batch_size
    opts: dict[str, Any] = {
        "max_batch_size": batch,
        "max_num_tokens": max(resolved.max_num_tokens, batch * (1 + k)),
        "max_seq_len": serving.max_seq_len,
    }
    if serving.max_input_len is not None:
        opts["max_input_len"] = serving.max_input_len
    if profile.target.dtype != "auto":
        opts["dtype"] = profile.target.dtype
    if profile.target.trust_remote_code:
        opts["trust_remote_code"] = True
    opts["tensor_parallel_size"] = profile.hardware.tensor_parallel
    opts["pipeline_parallel_size"] = profile.hardware.pipeline_parallel
    opts["kv_cache_config"] = {
        "free_gpu_memory_fraction": serving.kv_cache_free_gpu_memory_fraction,
        "enable_block_reuse": True,
    }
    return opts


def llm_api_options(
    resolved: Resolved,
    *,
    draft_len: int,
    schedule: Mapping[int, int] | Sequence[Sequence[int]] | None = None,
    max_concurrency: int | None = None,
    tuning: bool = False,
    draft_path: str | None = None,
) -> dict[str, Any]:
    """The `extra_llm_api_options` YAML as a dict for `resolved`'s TRT-LLM line.

    `schedule` is the profile's lower-bound map or canonical ranges; `draft_path` replaces the
    profile's drafter reference (e.g. the fetched, revision-pinned folder).
    """
    profile = resolved.profile
    line = resolved.line
    if line is None:
        raise ValueError("the reference backend has no TensorRT-LLM options")
    serving, spec = profile.serving, profile.speculative
    mech = spec.mechanism
    batch = serving.max_batch_size
    k = draft_len
    ranges = None
    if mech != "none" and schedule is not None:
        ranges = canonical(schedule, max_concurrency=max_concurrency, max_batch_size=batch)
        k = max(r[2] for r in ranges)
    speculating = mech != "none" and k > 0  # a tune that found no K worth it switches speculation off
    opts = _limits(resolved, k if speculating else 0)
    bounds = [b for lo, hi, _ in ranges or () for b in (lo, hi)] + ([max_concurrency] if max_concurrency else [])
    opts["cuda_graph_config"] = {"enable_padding": True, "batch_sizes": _graph_batch_sizes(batch, bounds)}
    if not _overlap(resolved):
        opts["disable_overlap_scheduler"] = True
    if tuning:
        opts["enable_iter_perf_stats"] = True
    if speculating:
        if draft_path is None:
            draft_path = spec.draft_model
        cfg = _speculative_config(resolved, line, k, draft_path)
        if ranges is not None and line.schedule != "unknown":  # unknown: one K (the tune's note says so)
            cfg["draft_len_schedule"] = emit_schedule(ranges, line)
        if max_concurrency is not None and not ("draft_len_schedule" in cfg and line.schedule_excludes_max_concurrency):
            cfg["max_concurrency"] = max_concurrency  # 1.3: the schedule's top key already stops speculation
        opts["speculative_config"] = cfg
    return opts


def serving_notes(resolved: Resolved, options: dict[str, Any]) -> list[str]:
    """Where the emitted `draft_len_schedule` is not what serves: the range runs the mechanism one-model."""
    declared = decoding_of(resolved.profile.speculative.mechanism)
    if "draft_len_schedule" not in options.get("speculative_config", {}) or declared is None or resolved.line is None:
        return []
    return [f"draft_len_schedule: {ONE_MODEL_K}"] if declared.one_model(resolved.loaded.options, resolved.line) else []
