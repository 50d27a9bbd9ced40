"""The profiles shipped with specdeploy: list, find by name, copy."""

from __future__ import annotations

from pathlib import Path

from specdeploy._resources import data_dir


def shipped_profiles() -> dict[str, Path]:
    """name -> file for every `profiles/**/*.yaml`."""
    root = data_dir("profiles")
    return {p.stem: p for p in sorted(root.rglob("*.yaml"))}


def find_shipped(name: str) -> Path | None:
    stem = Path(name).stem if name.endswith((".yaml", ".yml")) else name
    return shipped_profiles().get(stem)


def shipped_hint(name: str) -> str:
    """The closest shipped name for a miss (`h200-eagl`), and where the names are."""
    from difflib import get_close_matches

    close = get_close_matches(Path(name).stem, list(shipped_profiles()), n=1)
    return f"did you mean '{close[0]}'? (`specdeploy profiles list`)" if close else "see `specdeploy profiles list`"
