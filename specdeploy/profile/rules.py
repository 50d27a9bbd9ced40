"""Cross-field rules: the compatibility matrix and the limits, as one table of named rules.

Mechanism-specific rules live in each plugin's `check`; these are the ones every profile obeys.
Model-dependent rules report `skipped` (with the reason) when the model could not be resolved.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from specdeploy.issues import Issue
from specdeploy.plugin.base import CheckContext, Mechanism
from specdeploy.plugin.registry import engines, get_engine
from specdeploy.profile.schema import Profile, Tune

MODEL_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
"""A Triton model folder name that cannot escape the repository (no '/', no leading '.', no newline)."""


def bad_model_name(name: str) -> bool:
    return not MODEL_NAME.fullmatch(name) or name in (".", "..")


@dataclass(frozen=True)
class Rule:
    id: str
    doc: str
    check: Callable[[CheckContext, Mechanism | None], Iterable[Issue]]


def draft_len_candidates(profile: Profile, mech: type[Mechanism] | Mechanism | None) -> tuple[int, ...]:
    """The one K range: what `tune` searches and what `plan` sizes the deployment for (`tune.draft_lens`, else
    1 .. twice the mechanism's default, capped by its max_draft_len and by a fixed `draft_len`)."""
    if profile.tune.draft_lens:
        return tuple(profile.tune.draft_lens)
    if mech is None:
        return ()
    ceiling = mech.max_draft_len
    if isinstance(profile.speculative.draft_len, int):
        ceiling = min(ceiling, profile.speculative.draft_len)
    return tuple(range(1, min(ceiling, 2 * mech.default_draft_len) + 1))


def planned_draft_len(ctx: CheckContext, mech: Mechanism | None) -> int:
    """The largest draft length a deployment may use: fixed, the tuning candidates' max, or the default."""
    spec = ctx.profile.speculative
    if mech is None:
        return 0 if spec.mechanism == "none" else 5  # TRT-LLM AUTO uses up to 5 (docs/design/trtllm.md §2)
    fixed = mech.fixed_draft_len(ctx.options) if ctx.options is not None else None
    if fixed is not None:
        return fixed
    if isinstance(spec.draft_len, int):
        return spec.draft_len
    return max(draft_len_candidates(ctx.profile, mech) or (mech.default_draft_len,))


def _matrix(ctx: CheckContext, mech: Mechanism | None) -> Iterator[Issue]:
    runtime = ctx.profile.runtime
    engine = get_engine(runtime.backend)
    if mech is None:
        if ctx.profile.speculative.mechanism == "auto" and not engine.auto_mechanism:
            yield Issue(
                ("speculative", "mechanism"),
                "mechanism 'auto' is TensorRT-LLM's PyTorch-backend heuristic",
                "name a mechanism explicitly",
            )
        return
    line = engine.support_line(ctx.line)
    if not mech.supports(runtime.backend, line):
        where = "; ".join(f"{b} ({', '.join(v)})" for b, v in mech.supported().items()) or "nowhere"
        yield Issue(
            ("speculative", "mechanism"),
            f"{mech.name} does not run on backend '{runtime.backend}'"
            + (f" with {engine.product} {engine.release(ctx.profile)}" if ctx.line else ""),
            f"{mech.name} runs on: {where}",
        )
        if (why := mech.unsupported(runtime.backend)) is not None:
            yield Issue(("speculative", "mechanism"), why.reason, why.suggestion)


def _drafter(ctx: CheckContext, mech: Mechanism | None) -> Iterator[Issue]:
    spec = ctx.profile.speculative
    if mech is not None and mech.needs_draft_model and not spec.draft_model:
        yield Issue(("speculative", "draft_model"), f"{mech.name} needs a draft_model", "set speculative.draft_model")
    known = mech is not None or spec.mechanism in ("none", "auto")  # an unknown name is reported once, as such
    if spec.draft_model and known and (mech is None or not mech.needs_draft_model):
        yield Issue(
            ("speculative", "draft_model"),
            f"mechanism '{spec.mechanism}' does not use a draft_model",
            "remove speculative.draft_model",
        )


def _draft_len(ctx: CheckContext, mech: Mechanism | None) -> Iterator[Issue]:
    spec = ctx.profile.speculative
    if mech is None:
        if spec.mechanism == "none" and (isinstance(spec.draft_len, int) or spec.schedule or spec.max_concurrency):
            yield Issue(
                ("speculative", "mechanism"),
                "draft_len/schedule/max_concurrency are set but mechanism is 'none'",
                "pick a mechanism, or remove them",
            )
        return
    limit = mech.max_draft_len
    if isinstance(spec.draft_len, int) and spec.draft_len > limit:
        yield Issue(("speculative", "draft_len"), f"{mech.name} drafts at most {limit} tokens, not {spec.draft_len}")
    for value in ctx.profile.tune.draft_lens or []:
        if value > limit:
            yield Issue(("tune", "draft_lens"), f"candidate {value} exceeds {mech.name}'s limit of {limit}")
            break
    top_candidate = max(ctx.profile.tune.draft_lens or [0])
    if isinstance(spec.draft_len, int) and spec.draft_len < top_candidate <= limit:  # what `tune` refuses
        kept = ", ".join(
            str(k)
            for k in [k for k in ctx.profile.tune.draft_lens or [] if k <= spec.draft_len]
            or range(1, spec.draft_len + 1)
        )
        yield Issue(
            ("tune", "draft_lens"),
            f"candidates go up to {top_candidate}, beyond draft_len {spec.draft_len} "
            "(the engine's maximum): `specdeploy tune` refuses them",
            f"keep tune.draft_lens <= {spec.draft_len} (--set 'tune.draft_lens=[{kept}]'), or set draft_len: auto",
            severity="warning",
        )
    if spec.schedule:
        top = max(spec.schedule.values())
        if isinstance(spec.draft_len, int) and top > spec.draft_len:
            yield Issue(
                ("speculative", "schedule"),
                f"schedule asks for draft length {top} > draft_len "
                f"{spec.draft_len} (the maximum buffers are sized for)",
                f"set draft_len: {top}",
            )
        if top > limit:
            yield Issue(("speculative", "schedule"), f"schedule value {top} exceeds {mech.name}'s limit of {limit}")


def _parallel(ctx: CheckContext, mech: Mechanism | None) -> Iterator[Issue]:
    hw = ctx.profile.hardware
    if hw.tensor_parallel * hw.pipeline_parallel > hw.count:
        yield Issue(
            ("hardware", "tensor_parallel"),
            f"tensor_parallel x pipeline_parallel = "
            f"{hw.tensor_parallel * hw.pipeline_parallel} > count {hw.count} GPUs",
            f"set hardware.count: {hw.tensor_parallel * hw.pipeline_parallel}",
        )
    if ctx.target is not None and ctx.target.heads % hw.tensor_parallel:
        yield Issue(
            ("hardware", "tensor_parallel"),
            f"{ctx.target.heads} attention heads do not split over tensor_parallel {hw.tensor_parallel}",
        )
    engine = get_engine(ctx.profile.runtime.backend)
    if not engine.gpu and hw.gpu not in ("cpu", "auto"):
        yield Issue(
            ("hardware", "gpu"),
            f"the {engine.name} backend runs on CPU (or whatever torch sees)",
            "set hardware.gpu: cpu",
        )
    if hw.gpu == "cpu" and not engine.cpu:
        cpu = [e.name for e in engines().values() if e.cpu]
        yield Issue(
            ("hardware", "gpu"), f"gpu: cpu is only for the {' or '.join(cpu)} backend", "name the GPU, or auto"
        )
    if ctx.gpu is not None and ctx.profile.target.quantization == "fp8" and not ctx.gpu.fp8_flops:
        yield Issue(
            ("target", "quantization"), f"{ctx.gpu.name} has no FP8 tensor cores", "use int4_awq or int8_sq, or none"
        )


def _tokens(ctx: CheckContext, mech: Mechanism | None) -> Iterator[Issue]:
    serving = ctx.profile.serving
    k = planned_draft_len(ctx, mech)
    need = serving.max_batch_size * (1 + k)
    if serving.max_num_tokens is not None and serving.max_num_tokens < need:
        yield Issue(
            ("serving", "max_num_tokens"),
            f"max_num_tokens {serving.max_num_tokens} < max_batch_size x "
            f"(1 + draft_len) = {serving.max_batch_size} x {1 + k} = {need}",
            f"set serving.max_num_tokens: {need} or lower max_batch_size",
        )
    if serving.max_input_len is not None and serving.max_input_len >= serving.max_seq_len:
        yield Issue(
            ("serving", "max_input_len"),
            f"max_input_len {serving.max_input_len} leaves no room to generate "
            f"within max_seq_len {serving.max_seq_len}",
        )
    if ctx.target is None:
        yield Issue(
            ("serving", "max_seq_len"),
            "context-length check skipped: the target's config.json was not resolved",
            severity="skipped",
        )
    elif serving.max_seq_len > ctx.target.context:
        yield Issue(
            ("serving", "max_seq_len"),
            f"max_seq_len {serving.max_seq_len} exceeds the model's context {ctx.target.context}",
            f"set serving.max_seq_len: {ctx.target.context} or less",
        )
    maxc = ctx.profile.speculative.max_concurrency
    if maxc is not None and maxc > serving.max_batch_size:
        yield Issue(
            ("speculative", "max_concurrency"),
            f"max_concurrency {maxc} > max_batch_size {serving.max_batch_size} never switches speculation off",
            severity="warning",
        )


def _triton(ctx: CheckContext, mech: Mechanism | None) -> Iterator[Issue]:
    triton, backend = ctx.profile.triton, ctx.profile.runtime.backend
    layouts = get_engine(backend).layouts
    if triton.layout not in ("auto", *layouts):
        yield Issue(
            ("triton", "layout"),
            f"layout '{triton.layout}' does not serve the {backend} backend",
            f"use layout: {' or '.join(layouts)} (or auto)",
        )
    if bad_model_name(triton.model_name):
        yield Issue(
            ("triton", "model_name"),
            f"{triton.model_name!r:.60} is not a valid model folder name",
            "use letters, digits, '_', '-' and '.' (no '/', no leading '.')",
        )
    if triton.decoupled is False and ctx.profile.serving.streaming:
        yield Issue(
            ("triton", "decoupled"),
            "streaming needs a decoupled Triton model",
            "set triton.decoupled: true, or serving.streaming: false",
        )


def _contract(ctx: CheckContext, mech: Mechanism | None) -> Iterable[Issue]:
    return get_engine(ctx.profile.runtime.backend).profile_issues(ctx, mech)


def _tune(ctx: CheckContext, mech: Mechanism | None) -> Iterator[Issue]:
    tune = ctx.profile.tune
    if tune.objective == "goodput" and not (tune.sla.p99_itl_ms or tune.sla.p99_ttft_ms):
        yield Issue(
            ("tune", "objective"),
            "objective goodput needs an SLA to count good tokens against",
            "set tune.sla.p99_itl_ms and/or tune.sla.p99_ttft_ms, or use objective: throughput",
        )
    yield from _tune_concurrency(ctx, mech)
    from specdeploy.errors import UsageError
    from specdeploy.prompts import BUILTIN_DATASETS, check_dataset  # light: no torch

    try:
        check_dataset(tune.dataset)  # the loader the tune backends use: what fails there fails here
    except UsageError as exc:
        yield Issue(
            ("tune", "dataset"),
            exc.message,
            f"use {' or '.join(BUILTIN_DATASETS)}, or a SPEED-Bench "
            "JSONL file (question_id, category, turns); a relative path is read from the current folder",
        )


def tunes(profile: Profile, mech: Mechanism | None, options: Any) -> bool:
    """Whether a build tunes the draft length (`draft_len: auto`, no schedule, a mechanism whose options do not
    fix K, as lookahead's (W, N, G) do); the plan's tune step and validate's tune rules ask the same."""
    spec = profile.speculative
    if spec.mechanism == "none" or spec.draft_len != "auto" or spec.schedule is not None:
        return False
    return not (mech is not None and options is not None and mech.fixed_draft_len(options) is not None)


def _tune_concurrency(ctx: CheckContext, mech: Mechanism | None) -> Iterator[Issue]:
    """What `tune` skips (tune.setup): all of tune.concurrency above the batch fails a build that tunes (and an
    explicit `specdeploy tune` of a profile that does not); some above only matters when the user chose them."""
    batch, concurrency = ctx.profile.serving.max_batch_size, ctx.profile.tune.concurrency
    above = [c for c in concurrency if c > batch]
    if not above or ctx.profile.speculative.mechanism == "none":  # `tune` refuses mechanism none outright
        return
    tuned = tunes(ctx.profile, mech, ctx.options)
    if len(above) == len(concurrency):
        yield Issue(
            ("tune", "concurrency"),
            f"every tune.concurrency is above serving.max_batch_size {batch}: nothing to tune",
            f"include a concurrency <= {batch}",
            severity="error" if tuned else "warning",
        )
    elif tuned and ctx.given(("tune", "concurrency")):
        default = Tune.model_fields["concurrency"].get_default(call_default_factory=True)
        yield Issue(
            ("tune", "concurrency"),
            f"{', '.join(map(str, above))} above serving.max_batch_size {batch}: tune skips them",
            "drop them or raise serving.max_batch_size",
            severity="warning",
            default_fails=any(c > batch for c in default),
        )


def _deploy(ctx: CheckContext, mech: Mechanism | None) -> Iterator[Issue]:
    from specdeploy.profile.topology import topology_issues

    yield from topology_issues(ctx.profile, list(ctx.profile.deploy.targets))


RULES: tuple[Rule, ...] = (
    Rule("matrix", "mechanism x backend x TensorRT-LLM version", _matrix),
    Rule("drafter", "a draft model exactly when the mechanism needs one", _drafter),
    Rule("draft_len", "draft length, schedule and candidates within the mechanism's limits", _draft_len),
    Rule("parallel", "TP x PP <= GPU count; heads split over TP; CPU only for the reference backend", _parallel),
    Rule("tokens", "max_num_tokens >= B x (1 + K); max_seq_len <= the model's context", _tokens),
    Rule("triton", "Triton layout matches the backend; streaming needs decoupled", _triton),
    Rule(
        "contract",
        "what the engine's release refuses (Engine.profile_issues: for TensorRT-LLM, the "
        "trtllm_version's range; engines only from 1.2.x)",
        _contract,
    ),
    Rule("tune", "goodput has an SLA; tune.dataset is built in or a readable SPEED-Bench JSONL file", _tune),
    Rule("deploy", "deploy targets: llmapi layout, a known image, TP x PP split over whole nodes", _deploy),
)


def check_rules(ctx: CheckContext, mech: Mechanism | None) -> list[Issue]:
    """Every rule's issues; the mechanism's own checks need its options, so they wait for valid ones."""
    issues = [issue for rule in RULES for issue in rule.check(ctx, mech)]
    if mech is not None and ctx.options is not None:
        issues.extend(mech.check(ctx))
    return issues
