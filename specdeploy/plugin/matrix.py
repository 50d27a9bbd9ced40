"""The mechanism x engine x release matrix (`specdeploy mechanisms`), drawn from the installed plugins."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from specdeploy.plugin.engine import RangeNote
from specdeploy.plugin.registry import engines, registry


@dataclass(frozen=True)
class MatrixRow:
    """One mechanism: where it runs, and per release range of an engine with release lines how it is spelled."""

    schema_version: ClassVar[int] = 1
    name: str
    summary: str
    needs_draft_model: bool
    support: dict[str, list[str]]
    """engine -> the release lines it runs on (`Mechanism.supported`)."""
    max_draft_len: int
    trtllm_ranges: dict[str, list[RangeNote]]
    """engine -> its `range_notes` (engines with release lines only)."""
    source: str
    """The plugin class, "module:Class"."""

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "summary": self.summary,
            "needs_draft_model": self.needs_draft_model,
            "support": self.support,
            "max_draft_len": self.max_draft_len,
            "trtllm_ranges": self.trtllm_ranges,
            "source": self.source,
        }


def matrix() -> list[MatrixRow]:
    """A row per installed mechanism, by name."""
    installed = engines()
    return [
        MatrixRow(
            name=name,
            summary=cls.summary,
            needs_draft_model=cls.needs_draft_model,
            support={b: list(v) for b, v in cls.supported().items()},
            max_draft_len=cls.max_draft_len,
            trtllm_ranges={
                b: installed[b].range_notes(name, tuple(v))
                for b, v in cls.supported().items()
                if b in installed and installed[b].version_field
            },
            source=f"{cls.__module__}:{cls.__qualname__}",
        )
        for name, cls in sorted(registry().items())
    ]
