"""The profiles shipped with specdeploy: list, find by name, copy."""

from __future__ import annotations

from dataclasses import dataclass
from difflib import get_close_matches
from pathlib import Path
from typing import ClassVar

from specdeploy._resources import data_dir


@dataclass(frozen=True)
class ShippedProfile:
    """One row of `specdeploy profiles list`."""

    schema_version: ClassVar[int] = 1
    name: str
    path: Path
    description: str
    """The profile's top-level `description:` line; empty when it has none."""

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "path": str(self.path), "description": self.description}


def shipped_profiles() -> dict[str, Path]:
    """name -> file for every `profiles/**/*.yaml`."""
    root = data_dir("profiles")
    return {p.stem: p for p in sorted(root.rglob("*.yaml"))}


def find_shipped(name: str) -> Path | None:
    stem = Path(name).stem if name.endswith((".yaml", ".yml")) else name
    return shipped_profiles().get(stem)


def shipped_hint(name: str) -> str:
    """The closest shipped name for a miss (`h200-eagl`), and where the names are."""
    close = get_close_matches(Path(name).stem, list(shipped_profiles()), n=1)
    return f"did you mean '{close[0]}'? (`specdeploy profiles list`)" if close else "see `specdeploy profiles list`"


def listed() -> list[ShippedProfile]:
    """Every shipped profile with its description, read without parsing the YAML."""
    rows = []
    for name, path in shipped_profiles().items():
        description = next(
            (
                line.split(":", 1)[1].strip()
                for line in path.read_text().splitlines()
                if line.startswith("description:")
            ),
            "",
        )
        rows.append(ShippedProfile(name, path, description))
    return rows
