"""What a mechanism declares for the reference engine: the drafter class its `Mechanism.engines["reference"]`
names, and which kind of drafter folder that class reads. The runtime builds it per decode
(`runtime.drafters.make_drafter`) and loads the profile's draft model only for the drafters that read one."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Literal

DrafterKind = Literal["head", "model"]
"""What a reference drafter folder holds; its `specdeploy_drafter.json` says `kind` (absent: `model`)."""
DRAFTER_KINDS: dict[str, str] = {
    "head": "one reading the target's hidden states (runtime/eagle_model.py)",
    "model": "a language model of its own with the target's vocabulary",
}


@dataclass(frozen=True)
class ReferenceDrafter:
    factory: str
    """"module:Class" of a `runtime.drafters.Drafter` with `for_pair(pair, temperature, generator, ngram_match)`."""
    reads: DrafterKind | None = None
    """The kind of drafter folder the class reads as `pair.drafter` (the profile's draft_model, loaded beside the
    target); None: it reads none."""

    @property
    def lines(self) -> tuple[str, ...]:
        return ("cpu",)

    def build(self, pair: Any, temperature: float, generator: Any, ngram_match: int) -> Any:
        module, _, name = self.factory.partition(":")
        return getattr(importlib.import_module(module), name).for_pair(pair, temperature, generator, ngram_match)


def drafter_of(mechanism: str) -> ReferenceDrafter | None:
    """The reference drafter the named mechanism declares (None for `none`, unknown names and the others)."""
    from specdeploy.plugin.registry import find

    cls = find(mechanism) if mechanism not in ("none", "auto") else None
    declared = cls.engines.get("reference") if cls is not None else None
    return declared if isinstance(declared, ReferenceDrafter) else None


def runnable() -> tuple[str, ...]:
    """`none` and every installed mechanism the reference runtime drafts for."""
    from specdeploy.plugin.registry import mechanism_names

    return ("none", *(name for name in mechanism_names() if drafter_of(name) is not None))


def reads(mechanism: str) -> DrafterKind | None:
    """The kind of drafter folder the named mechanism's reference drafter reads; None: it reads none."""
    declared = drafter_of(mechanism)
    return declared.reads if declared is not None else None


def needs_model(mechanism: str) -> bool:
    return reads(mechanism) is not None
