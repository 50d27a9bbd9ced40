"""The mechanism plugin interface: what a drafter mechanism tells specdeploy about itself.

A plugin is a `Mechanism` subclass exposed through the `specdeploy.mechanisms` entry-point group;
the built-in ones in `plugins/specdeploy_mechanisms/` use exactly that door. Later pipeline stages
call the hooks below (emission per TRT-LLM version, Triton parameters, drafter cost).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict

from specdeploy.profile.issues import Issue

if TYPE_CHECKING:
    from specdeploy.profile.schema import Profile
    from specdeploy.resolve.gpus import GpuSpec
    from specdeploy.resolve.model_spec import ModelSpec
    from specdeploy.trtllm.versions import VersionLine


class NoOptions(BaseModel):
    """For mechanisms without options: any key is an error."""

    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True)
class CheckContext:
    """What a mechanism's rules may look at; model specs are None when they could not be resolved."""

    profile: Profile
    options: BaseModel
    target: ModelSpec | None
    draft: ModelSpec | None
    line: VersionLine | None
    gpu: GpuSpec | None

    def issue(self, field: str, message: str, suggestion: str | None = None) -> Issue:
        """An error located at `speculative.<field>` (dotted sub-paths allowed)."""
        return Issue(("speculative", *field.split(".")), message, suggestion)


class Mechanism:
    """Base class of drafter mechanisms. Subclasses set the class variables and may override hooks."""

    name: ClassVar[str]
    summary: ClassVar[str] = ""
    Options: ClassVar[type[BaseModel]] = NoOptions
    needs_draft_model: ClassVar[bool] = False
    chain: ClassVar[bool] = True
    """A K-token draft is the first K tokens of a K_max draft, so one K_max run gives AL for every K."""
    support: ClassVar[dict[str, tuple[str, ...]]] = {}
    """backend -> TRT-LLM version lines (`1.2`, `1.3`) it works on; `reference` uses `("cpu",)`."""
    max_draft_len: ClassVar[int] = 64
    """Structural upper limit of the draft length."""
    default_draft_len: ClassVar[int] = 3
    """What `draft_len: auto` starts from before tuning."""

    def parse_options(self, raw: dict[str, Any]) -> BaseModel:
        return self.Options.model_validate(raw)

    def fixed_draft_len(self, options: BaseModel) -> int | None:
        """A draft length the options force (lookahead derives it from W, N, G); None when free."""
        return None

    def check(self, ctx: CheckContext) -> Iterable[Issue]:
        """Mechanism-specific cross-field rules; the generic ones live in `specdeploy.profile.rules`."""
        return ()

    def draft_cost(self, ctx: Any, batch: int, k: int) -> float | None:
        """Seconds to draft `k` tokens for `batch` sequences (`ctx` is a `perfmodel.DraftContext`).

        None lets the performance model use its own per-mechanism table (or a generic estimate for
        mechanisms it does not know); a third-party plugin overrides this to describe its drafter.
        """
        return None

    @classmethod
    def supports(cls, backend: str, line: str | None) -> bool:
        lines = cls.support.get(backend)
        if lines is None:
            return False
        return backend == "reference" or line in lines
