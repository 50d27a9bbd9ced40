"""What `vllm serve` is given: the speculative config, the `--config` YAML file and the equivalent argv.

Every emitted key remembers the profile path it came from (`Emitted.origin`), so that vLLM's own refusal of a
key (the self-check) points at the line of the profile that wrote it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from specdeploy.engines.vllm.contract import Range, ReleaseLine, check_schedule
from specdeploy.engines.vllm.declare import VllmMethod, method_of
from specdeploy.errors import UsageError
from specdeploy.issues import Issue
from specdeploy.schedule import Schedule, canonical

KeyPath = tuple[str, ...]
FIELD_ORIGIN: dict[str, KeyPath] = {
    "method": ("speculative", "mechanism"),
    "model": ("speculative", "draft_model"),
    "num_speculative_tokens": ("speculative", "draft_len"),
    "num_speculative_tokens_per_batch_size": ("speculative", "schedule"),
}
"""The profile key behind each speculative-config field specdeploy derives from more than one option."""


@dataclass(frozen=True)
class ServeLimits:
    """The serving side of a profile, as vLLM names it."""

    max_num_seqs: int
    max_model_len: int | None = None
    tensor_parallel_size: int = 1
    dtype: str = "auto"
    host: str = "127.0.0.1"
    port: int = 8000


@dataclass(frozen=True)
class Emitted:
    serve: dict[str, Any]
    """The `vllm serve --config` mapping: long option names without `--`; `speculative-config` a mapping."""
    speculative: dict[str, Any] | None
    origin: dict[str, KeyPath] = field(default_factory=dict)
    """Emitted setting -> the profile path it came from: serve options as flags (`--max-num-seqs`),
    speculative-config fields by name (`num_speculative_tokens`)."""
    notes: tuple[str, ...] = ()

    def argv(self) -> list[str]:
        """The same settings as command-line arguments; `--speculative-config` takes JSON."""
        out: list[str] = []
        for key, value in self.serve.items():
            out += [f"--{key}", json.dumps(value) if isinstance(value, dict) else str(value)]
        return out

    def config_yaml(self) -> str:
        import yaml

        return yaml.safe_dump(self.serve, sort_keys=False)


def _refuse(path: KeyPath, message: str, hint: str | None = None) -> UsageError:
    return UsageError(f"{'.'.join(path)}: {message}", hint=hint, issues=[Issue(path, message, hint)])


def _option_fields(method: VllmMethod, options: Mapping[str, Any]) -> dict[str, tuple[str, Any]]:
    """Option name -> (SpeculativeConfig field, value) for the options vLLM reads; refuses what it cannot honour."""
    out: dict[str, tuple[str, Any]] = {}
    for name, value in options.items():
        path = ("speculative", "options", name)
        if name in method.fields:
            if value is not None:
                out[name] = (method.fields[name], value)
        elif name in method.refused:
            allowed, why = method.refused[name]
            if value != allowed:
                raise _refuse(path, f"vLLM cannot honour {name}={value!r}: {why}", f"set {name}: {allowed!r}")
        elif name not in method.ignored:
            known = sorted({*method.fields, *method.refused, *method.ignored})
            raise _refuse(
                path,
                f"vLLM's {method.method} has no option '{name}'",
                f"options it reads: {', '.join(known) or 'none'}",
            )
    return out


def speculative_config(
    mechanism: str,
    options: Mapping[str, Any],
    k: int,
    line: ReleaseLine,
    *,
    drafter: str | None = None,
    drafter_revision: str | None = None,
) -> tuple[dict[str, Any], dict[str, KeyPath]]:
    """The `--speculative-config` mapping of one mechanism with a fixed K, and where each key came from."""
    method = method_of(mechanism)
    if method is None or not line.has_method(method.method):
        raise _refuse(
            ("speculative", "mechanism"),
            f"vLLM {line.releases} has no method for '{mechanism}'",
            f"vLLM {line.releases} methods: {', '.join(line.methods)} ({line.cite('speculative')})",
        )
    if k <= 0:
        raise _refuse(("speculative", "draft_len"), f"vLLM needs num_speculative_tokens > 0, not {k}")
    spec: dict[str, Any] = {"method": method.method, "num_speculative_tokens": k}
    origin = {key: FIELD_ORIGIN[key] for key in spec}
    for key, value in method.fixed.items():
        spec[key], origin[key] = value, ("speculative", "mechanism")
    if drafter and method.drafter != "none":
        spec["model"], origin["model"] = drafter, FIELD_ORIGIN["model"]
        if drafter_revision:
            spec["revision"], origin["revision"] = drafter_revision, ("speculative", "draft_revision")
    elif drafter:
        raise _refuse(("speculative", "draft_model"), f"vLLM's {method.method} takes no drafter model")
    elif method.drafter == "required":
        raise _refuse(("speculative", "draft_model"), f"vLLM's {method.method} needs a drafter model")
    for name, (key, value) in _option_fields(method, options).items():
        spec[key], origin[key] = value, ("speculative", "options", name)
    return spec, origin


def schedule_ranges(
    schedule: Schedule, k: int, limits: ServeLimits, line: ReleaseLine, max_concurrency: int | None = None
) -> list[Range]:
    """A tuned schedule as vLLM's inclusive ranges up to max_num_seqs. vLLM keeps the last range's K for every
    larger batch, so speculation stops above max_concurrency only through a K = 0 range."""
    try:
        ranges = canonical(schedule, max_concurrency=max_concurrency, max_batch_size=limits.max_num_seqs)
    except ValueError as exc:
        raise _refuse(("speculative", "schedule"), str(exc)) from None
    if max(r[2] for r in ranges) > k:
        raise _refuse(
            ("speculative", "schedule"),
            f"a schedule K above num_speculative_tokens = {k}: vLLM would "
            f"cap it at {k} silently ({line.cite('dynamic')})",
            "draft_len is the schedule's largest K",
        )
    last = ranges[-1][1]
    if last < limits.max_num_seqs and ranges[-1][2] > 0:
        ranges.append((last + 1, limits.max_num_seqs, 0))
    return check_schedule(ranges, line) if line.schedule_field else ranges


def _no_schedule(mechanism: str, line: ReleaseLine) -> str | None:
    """Why this mechanism on this release gets no per-batch-size schedule; None when it does."""
    if line.schedule_field is None:
        return f"vLLM {line.releases} has no per-batch-size schedule"
    method = method_of(mechanism)
    if method is not None and method.no_schedule:
        return f"vLLM's {method.method} takes no per-batch-size schedule ({method.no_schedule})"
    return None


def emit(
    mechanism: str | None,
    options: Mapping[str, Any],
    k: int,
    *,
    target: str,
    limits: ServeLimits,
    line: ReleaseLine,
    drafter: str | None = None,
    schedule: Schedule | None = None,
    max_concurrency: int | None = None,
    target_revision: str | None = None,
    drafter_revision: str | None = None,
) -> Emitted:
    """Everything `vllm serve` needs for one profile; `mechanism` None serves without speculation. vLLM expands no
    variable in its settings: a hub model is its id, pinned by a revision it finds in the hub cache."""
    serve: dict[str, Any] = {
        "model": target,
        **({"revision": target_revision} if target_revision else {}),
        "host": limits.host,
        "port": limits.port,
        "max-num-seqs": limits.max_num_seqs,
        "tensor-parallel-size": limits.tensor_parallel_size,
        "dtype": limits.dtype,
    }
    origin: dict[str, KeyPath] = {
        "--model": ("target", "model"),
        "--max-num-seqs": ("serving", "max_batch_size"),
        "--tensor-parallel-size": ("hardware", "tensor_parallel"),
        "--dtype": ("target", "dtype"),
        "--revision": ("target", "revision"),
    }
    if limits.max_model_len is not None:
        serve["max-model-len"], origin["--max-model-len"] = limits.max_model_len, ("serving", "max_seq_len")
    if mechanism is None:
        return Emitted(serve, None, origin)
    spec, spec_origin = speculative_config(
        mechanism, options, k, line, drafter=drafter, drafter_revision=drafter_revision
    )
    notes: list[str] = []
    if schedule:
        ranges = schedule_ranges(schedule, k, limits, line, max_concurrency)
        without = _no_schedule(mechanism, line)
        if without is None and line.schedule_field is not None:
            spec[line.schedule_field] = [list(r) for r in ranges]
            spec_origin[line.schedule_field] = FIELD_ORIGIN[line.schedule_field]
        else:
            off = next((lo for lo, _, kk in ranges if kk == 0), None)
            notes.append(
                f"{without}: K = {k} at every batch size (tuned: "
                + ", ".join(f"{lo}-{hi}: {kk}" for lo, hi, kk in ranges)
                + ")"
                + (
                    f"; the tuned schedule stops speculating from concurrency {off}, which this configuration cannot do"
                    if off
                    else ""
                )
            )
    serve["speculative-config"] = spec
    return Emitted(serve, spec, {**origin, **spec_origin}, tuple(notes))
