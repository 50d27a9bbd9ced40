"""What a mechanism declares for TensorRT-LLM: the values its `Mechanism.engines` entries hold.

`TrtllmDecoding` (engine `pytorch`) says how the LLM API spells the mechanism per release line and which keys of
`speculative_config` it adds; `TrtllmEngineBuild` (engine `tensorrt`, 1.2.x) says how `trtllm-build` and Triton's
tensorrtllm backend run it. The engine reads only these: a mechanism module is the one place its TensorRT-LLM facts
live, each with the upstream source it was read from (`sources`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from specdeploy.engines.trtllm.versions import RANGES, WHOLE_RANGE, VersionLine, version_key
from specdeploy.issues import Issue
from specdeploy.plugin.engine import RangeNote

Args = Callable[[Any], list[str]]
"""A Resolved profile -> argv words."""


@dataclass(frozen=True)
class TrtllmDeclaration:
    decoding_type: Mapping[str, str]
    """Release line ("1.2", "1.3") -> the `decoding_type` that line's `DecodingBaseConfig.from_dict` maps to the
    mechanism's config class. Its keys are the lines the mechanism supports (`Mechanism.supported`)."""
    since: Mapping[str, str] = field(default_factory=dict)
    """Line -> the first release of that line that has the mechanism (its earlier ranges refuse it)."""
    spelled_before: Mapping[str, str] = field(default_factory=dict)
    """Release -> the `decoding_type` of the ranges of its line below it, where the line's spelling came later
    (draft/target: 'DraftTarget' before 1.3.0rc8). A key must be a range boundary (`VersionLine.low`)."""
    unconfirmed: tuple[str, ...] = ()
    """`versions.UNCONFIRMED` keys that concern it (the matrix shows them on its row)."""
    sources: Mapping[str, str] = field(default_factory=dict)
    """Fact -> where it was read (the source keys of versions.py)."""

    @property
    def lines(self) -> tuple[str, ...]:
        return tuple(self.decoding_type)

    def has(self, line: VersionLine) -> bool:
        """Whether the release range `line` has the mechanism."""
        since = self.since.get(line.name)
        return line.name in self.decoding_type and (since is None or version_key(line.low) >= version_key(since))

    def spelling(self, line: VersionLine) -> str:
        """The `decoding_type` the range `line` reads for the mechanism."""
        for release, spelled in self.spelled_before.items():
            if release.startswith(f"{line.name}.") and version_key(line.low) < version_key(release):
                return spelled
        return self.decoding_type[line.name]

    def notes(self, line: VersionLine, options: Any = None) -> list[str]:
        """What differs in this range, for the matrix."""
        return []

    def releases(self) -> str:
        """Where it is, as a refusal names it: "1.3.0rc23 or a later 1.3 release", "the 1.2 line"."""
        return " or ".join(
            f"{self.since[name]} or a later {name} release" if name in self.since else f"the {name} line"
            for name in self.decoding_type
        )


@dataclass(frozen=True)
class TrtllmDecoding(TrtllmDeclaration):
    """A mechanism on TensorRT-LLM's PyTorch backend: its part of the LLM API's `speculative_config`."""

    fields: Callable[[Any, VersionLine], dict[str, Any]] | None = None
    """(options, line) -> the mechanism's own keys (EAGLE-3's tree and capture layers, n-gram's matching)."""
    length_keys: Callable[[VersionLine], tuple[str, ...]] | None = None
    """line -> the keys that carry K in place of `max_draft_len` and a drafter path (MTP: the target drafts)."""
    overlap: Callable[[Any], bool] = lambda _options: True
    """options -> False where the drafter path needs `disable_overlap_scheduler: true` (two-model drafting)."""
    refuse: Callable[[Any, VersionLine], str | Issue | None] = lambda _options, _line: None
    """(options, line) -> why the range cannot emit these options (EAGLE-3 two-model where refused), or None: a
    message (located at `speculative.options`) or an `Issue` at the option's own path. The core reports it at
    validate and refuses emission with it (`refusal`); a plugin's `check` need not repeat it."""
    range_notes: Callable[[VersionLine], list[str]] | None = None
    one_model: Callable[[Any, VersionLine], bool] = lambda _options, _line: False
    """(options, line) -> True where the range runs the drafter inside the target's graph (one-model), which does
    not support dynamic draft lengths: a `draft_len_schedule` is emitted but K stays max_draft_len (ONE_MODEL_K)."""

    def notes(self, line: VersionLine, options: Any = None) -> list[str]:
        return self.range_notes(line) if self.range_notes else []

    def refusal(self, options: Any, line: VersionLine) -> Issue | None:
        """The declared refusal of `options` in `line`'s range, as a located issue (None: the range emits them)."""
        found = self.refuse(options, line)
        if found is None or isinstance(found, Issue):
            return found
        return Issue(
            ("speculative", "options"),
            f"{found} (TensorRT-LLM range {line.range})",
            "change speculative.options, or pin a runtime.trtllm_version whose range emits them "
            "(specdeploy mechanisms)",
        )


@dataclass(frozen=True)
class TrtllmEngineBuild(TrtllmDeclaration):
    """A mechanism on TensorRT-LLM engines (`trtllm-build`, Triton's tensorrtllm backend; 1.2.x)."""

    mode: str | None = None
    """`trtllm-build --speculative_decoding_mode` of the target engine (None: the target builds plainly)."""
    convert: tuple[str, Args] | None = None
    """(converter script under examples/, its arguments after --model_dir) when the target converts with the
    drafter folded in (Medusa, EAGLE); their converters have no `--dtype auto`."""
    attach: tuple[str, str, Args] | None = None
    """(what, converter script, its arguments): a second conversion step that attaches the drafter to the converted
    base (ReDrafter); that converter has no --pp_size."""
    draft_engine: bool = False
    """The drafter is a second engine (`tensorrt_llm_draft`, orchestrator mode, through the BLS)."""
    modelopt: bool = False
    """A quantized target may go through Model-Optimizer's quantize.py (the drafter is not folded into it)."""
    triton: Callable[[Any], dict[str, Any]] | None = None
    """options -> the `tensorrt_llm` model's speculative parameters (decoding_mode, choices, lookahead W/N/G)."""
    engine_draft_len: Callable[[Any], int] | None = None
    """A Resolved profile -> the engine's max_draft_len where `trtllm-build` derives it from the checkpoint in place
    of `--max_draft_len` (ReDrafter); None: the profile's K."""
    repo_draft_len: Callable[[Mapping[str, str]], tuple[int, str, str] | None] | None = None
    """A rendered config.pbtxt's parameters -> (the draft tokens they need, which the engine must hold; what asks
    for them; the parameter to point at) for `check-repo`; None when they do not say."""


def decoding_of(mechanism: str) -> TrtllmDecoding | None:
    """What the named mechanism declares for the PyTorch backend (None: nothing, or an unknown name)."""
    found = _declared(mechanism, "pytorch")
    return found if isinstance(found, TrtllmDecoding) else None


def build_of(mechanism: str) -> TrtllmEngineBuild | None:
    """What the named mechanism declares for TensorRT engines (None: nothing, or an unknown name)."""
    found = _declared(mechanism, "tensorrt")
    return found if isinstance(found, TrtllmEngineBuild) else None


def declaration(mechanism: str, engine: str) -> TrtllmDeclaration | None:
    found = _declared(mechanism, engine)
    return found if isinstance(found, TrtllmDeclaration) else None


def builds() -> list[TrtllmEngineBuild]:
    """Every installed mechanism's engine-build declaration (`check-repo` reads rendered parameters with them)."""
    from specdeploy.plugin.registry import mechanism_names

    return [found for name in mechanism_names() if (found := build_of(name)) is not None]


def _declared(mechanism: str, engine: str) -> Any:
    from specdeploy.plugin.registry import find

    cls = find(mechanism) if mechanism not in ("none", "auto") else None
    return cls.engines.get(engine) if cls is not None else None


def range_notes(mechanism: str, lines: tuple[str, ...], engine: str) -> list[RangeNote]:
    """Per release range of `lines` that has `mechanism` on `engine` (pytorch, tensorrt): how it is spelled and
    what differs (for the matrix), from the mechanism's declaration."""
    declared = declaration(mechanism, engine)
    if declared is None:
        return []
    out: list[RangeNote] = []
    for line in RANGES:
        if line.name not in lines or not declared.has(line):
            continue
        notes = (
            []
            if line.schedule != "unknown"
            else ["draft_len_schedule UNKNOWN: a profile's refused, a tuned one emitted as one K"]
        )
        notes += declared.notes(line)
        unknown = [k for k in line.unknown if k in declared.unconfirmed or (k in WHOLE_RANGE and engine == "pytorch")]
        out.append(
            {
                "range": line.range,
                "decoding_type": declared.spelling(line),
                "notes": notes,
                "unknown": unknown,
            }
        )
    return out
