"""The mechanism plugin interface: what a drafter mechanism tells specdeploy about itself.

A plugin is a `Mechanism` subclass exposed through the `specdeploy.mechanisms` entry-point group;
the built-in ones in `plugins/specdeploy_mechanisms/` use exactly that door. Later pipeline stages
call the hooks below (emission per TRT-LLM version, Triton parameters, drafter cost).

Options: `Options` is a pydantic model with `extra="forbid"` and a description on every field. Set it to
the class, or name it with `lazy_options("pkg.module:Model")` so that importing the plugin (`specdeploy
mechanisms`, `--help`) does not import the model's module: only a profile that names the mechanism does.
Hooks read `ctx.options`, the validated `Options` instance.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from specdeploy.issues import Issue
from specdeploy.issues import Path as KeyPath

if TYPE_CHECKING:
    from pydantic import BaseModel

    from specdeploy.profile.schema import Profile
    from specdeploy.resolve.gpus import GpuSpec
    from specdeploy.resolve.model_spec import ModelSpec


class _LazyOptions:
    """Reads as the options model class, imported on first access."""

    def __init__(self, ref: str) -> None:
        self.module, _, self.name = ref.partition(":")

    def __get__(self, obj: object, owner: type | None = None) -> type[BaseModel]:
        model: type[BaseModel] = getattr(importlib.import_module(self.module), self.name)
        return model


def lazy_options(ref: str) -> Any:
    """`Options = lazy_options("pkg.module:Model")`: the model, its module imported when first read."""
    return _LazyOptions(ref)


def __getattr__(name: str) -> Any:  # `specdeploy.plugin.base.NoOptions` stays importable, lazily
    if name == "NoOptions":
        from specdeploy.plugin.options import NoOptions

        return NoOptions
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class CheckContext:
    """What a mechanism's rules may look at; model specs are None when they could not be resolved."""

    profile: Profile
    options: Any
    """The validated options (the mechanism's `Options` instance); None when they are invalid, and then the
    mechanism's `check` is not called."""
    target: ModelSpec | None
    draft: ModelSpec | None
    line: Any
    """The engine's release line (`plugin.engine.ReleaseLine`: `.name` is what `support` names), None without."""
    gpu: GpuSpec | None
    given: Callable[[KeyPath], bool] = lambda _path: True
    """Whether the profile (its file, a parent it extends, or `--set`) gave the value at a path, rather than the
    schema's default: a rule may stay quiet about a default the user never chose."""

    def issue(self, field: str, message: str, suggestion: str | None = None) -> Issue:
        """An error located at `speculative.<field>` (dotted sub-paths allowed)."""
        return Issue(("speculative", *field.split(".")), message, suggestion)


@dataclass(frozen=True)
class AcceptancePrior:
    """The published acceptance a mechanism's prior rests on, with its source: rows of the performance model's
    record (`sweep`: one AL per K = 1..n; `row`: one AL at one K, with a `note`), or conditional `rates` with
    their `basis` and `source` where the record has no AL."""

    sweep: tuple[str, ...] = ()
    row: str | None = None
    note: str = ""
    rates: tuple[float, ...] = ()
    basis: str = ""
    source: str = ""


@dataclass(frozen=True)
class Unsupported:
    """An `engines` entry for an engine the mechanism does not run on, saying why (no release of it has the
    mechanism, say): validation reports it beside the generic refusal, with the engine named only here."""

    reason: str
    suggestion: str | None = None


class Mechanism:
    """Base class of drafter mechanisms. Subclasses set the class variables and may override hooks."""

    name: ClassVar[str]
    summary: ClassVar[str] = ""
    Options: ClassVar[type[BaseModel]] = lazy_options("specdeploy.plugin.options:NoOptions")
    needs_draft_model: ClassVar[bool] = False
    chain: ClassVar[bool] = True
    """A K-token draft is the first K tokens of a K_max draft, so one K_max run gives AL for every K."""
    support: ClassVar[dict[str, tuple[str, ...]]] = {}
    """engine (`runtime.backend`) -> release lines (`1.2`, `1.3`; `reference` uses `("cpu",)`), for a plugin that
    declares no `engines` (it then validates and plans, but no engine can emit it)."""
    max_draft_len: ClassVar[int] = 64
    """Structural upper limit of the draft length."""
    default_draft_len: ClassVar[int] = 3
    """What `draft_len: auto` starts from before tuning."""
    engines: ClassVar[dict[str, Any]] = {}
    """engine name -> what the mechanism emits there, as a value of the type that engine's package defines
    (`specdeploy.engines.trtllm.declare.TrtllmDecoding` / `TrtllmEngineBuild`, `...reference.declare.ReferenceDrafter`),
    or `Unsupported(reason)`. An engine refuses a mechanism that declares nothing (or `Unsupported`) for it."""
    drafting: ClassVar[str] = "sequential"
    """How the drafter proposes K tokens: `sequential` (K passes), `one_pass` (all K at once), `none` (host-side
    matching, no forward); the performance model charges a launch per pass."""
    training: ClassVar[str] = ""
    """What the mechanism costs before it serves (a trained head, an off-the-shelf model, nothing)."""
    prior: ClassVar[AcceptancePrior | None] = None
    """The published acceptance the tuner starts from; None: a generic prior."""

    def parse_options(self, raw: dict[str, Any]) -> BaseModel:
        return self.Options.model_validate(raw)

    def fixed_draft_len(self, options: Any) -> int | None:
        """A draft length the options force (lookahead derives it from W, N, G); None when free."""
        return None

    def check(self, ctx: CheckContext) -> Iterable[Issue]:
        """Mechanism-specific cross-field rules; the generic ones live in `specdeploy.profile.rules`."""
        return ()

    def draft_cost(self, ctx: Any, batch: int, k: int) -> float | None:
        """Seconds to draft `k` tokens for `batch` sequences (`ctx` is a `perfmodel.DraftContext`, whose `forward`,
        `layer`, `heads_only` and `generic` price a drafter). None: the generic estimate (the draft model's
        forwards, else a tenth of a target step per token)."""
        return None

    @classmethod
    def prices_drafting(cls) -> bool:
        """Whether the plugin describes its drafter's cost (the performance model compares those)."""
        return cls.draft_cost is not Mechanism.draft_cost

    def applies_to(self, target: Any) -> bool:
        """Whether the mechanism can serve this target at all (MTP needs MTP layers); advice skips it otherwise."""
        return True

    @classmethod
    def supports(cls, engine: str, line: str | None) -> bool:
        """Whether it runs on `engine` at `line` (the engine's `support_line` of the profile's release)."""
        return line in cls.supported().get(engine, ())

    @classmethod
    def supported(cls) -> dict[str, tuple[str, ...]]:
        """engine -> the release lines it runs on: its `engines` declarations' lines, else `support`."""
        if cls.engines:
            return {
                engine: tuple(declared.lines)
                for engine, declared in cls.engines.items()
                if not isinstance(declared, Unsupported)
            }
        return dict(cls.support)

    @classmethod
    def unsupported(cls, engine: str) -> Unsupported | None:
        """Why it does not run on `engine`, when its `engines` says so."""
        declared = cls.engines.get(engine)
        return declared if isinstance(declared, Unsupported) else None
