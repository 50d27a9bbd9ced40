"""Discovery of mechanism plugins through entry points, loaded once, duplicates refused."""

from __future__ import annotations

from functools import lru_cache
from importlib.metadata import entry_points

from specdeploy.errors import SpecdeployError, UsageError
from specdeploy.plugin.base import Mechanism

GROUP = "specdeploy.mechanisms"
RESERVED = ("auto", "none")


class PluginError(SpecdeployError):
    """A plugin is broken or two plugins claim one name."""


@lru_cache(maxsize=1)
def registry() -> dict[str, type[Mechanism]]:
    """name -> Mechanism class, for every installed entry point of the group."""
    found: dict[str, type[Mechanism]] = {}
    origin: dict[str, str] = {}
    for ep in sorted(entry_points(group=GROUP), key=lambda e: e.name):
        try:
            cls = ep.load()
        except Exception as exc:  # a broken third-party plugin must not hide the others' names
            raise PluginError(f"mechanism plugin '{ep.name}' ({ep.value}) failed to load: {exc}") from exc
        if not (isinstance(cls, type) and issubclass(cls, Mechanism)):
            raise PluginError(f"entry point '{ep.name}' ({ep.value}) is not a specdeploy.plugin.Mechanism subclass")
        name = cls.name
        if name != ep.name or name in RESERVED:
            raise PluginError(f"plugin {ep.value} defines its name as '{name}' but is registered as '{ep.name}'"
                              + (" (a reserved name)" if name in RESERVED else ""))
        if name in found and ep.value != origin[name]:
            raise PluginError(f"mechanism '{name}' is defined by both {origin[name]} and {ep.value}")
        found[name], origin[name] = cls, ep.value
    return found


def mechanism_names() -> list[str]:
    return sorted(registry())


def get_mechanism(name: str) -> Mechanism:
    """An instance of the named mechanism, or a UsageError listing the valid names."""
    try:
        return registry()[name]()
    except KeyError:
        from difflib import get_close_matches

        close = get_close_matches(name, [*registry(), *RESERVED], n=1)
        hint = f"did you mean '{close[0]}'?" if close else None
        raise UsageError(f"unknown mechanism '{name}'; known: {', '.join([*mechanism_names(), *RESERVED])}",
                         hint=hint) from None
