"""Discovery of mechanism plugins through entry points; a plugin's module is imported only when named.

Entry-point names are read for every installed plugin (cheap: `entrypoints.py` reads the metadata
folders), so two packages claiming one name are refused at once; the plugin's code loads on first use
(`validate` of an eagle3 profile imports eagle3 only).
"""

from __future__ import annotations

from functools import cache

from specdeploy.errors import SpecdeployError, UsageError
from specdeploy.plugin.base import Mechanism
from specdeploy.plugin.entrypoints import EntryPoint, entry_points

GROUP = "specdeploy.mechanisms"
RESERVED = ("auto", "none")


class PluginError(SpecdeployError):
    """A plugin is broken or two plugins claim one name."""


@cache
def _declared() -> dict[str, EntryPoint]:
    """name -> entry point; the same name pointing at two different objects is an error naming both."""
    found: dict[str, EntryPoint] = {}
    for ep in entry_points(GROUP):
        if ep.name in RESERVED:
            raise PluginError(f"plugin {ep.value} registers the reserved name '{ep.name}'")
        if ep.name in found and found[ep.name].value != ep.value:
            first, second = sorted((found[ep.name].value, ep.value))
            raise PluginError(f"mechanism '{ep.name}' is defined by both {first} and {second}")
        found[ep.name] = ep
    return dict(sorted(found.items()))


@cache
def load(name: str) -> type[Mechanism]:
    """Import one plugin and check that it is what its entry point says."""
    ep = _declared()[name]
    try:
        cls = ep.load()
    except Exception as exc:  # a broken third-party plugin gets a message, not a traceback
        raise PluginError(f"mechanism plugin '{name}' ({ep.value}) failed to load: {exc}") from exc
    if not (isinstance(cls, type) and issubclass(cls, Mechanism)):
        raise PluginError(f"entry point '{name}' ({ep.value}) is not a specdeploy.plugin.Mechanism subclass")
    if getattr(cls, "name", None) != name:
        raise PluginError(f"plugin {ep.value} defines its name as '{getattr(cls, 'name', None)}' but is "
                          f"registered as '{name}'")
    return cls


def registry() -> dict[str, type[Mechanism]]:
    """name -> Mechanism class for every installed plugin (imports them all: listings and docs)."""
    return {name: load(name) for name in _declared()}


def find(name: str) -> type[Mechanism] | None:
    """The named plugin's class, or None when no plugin has that name (imports only that plugin)."""
    return load(name) if name in _declared() else None


def mechanism_names() -> list[str]:
    return list(_declared())


def get_mechanism(name: str) -> Mechanism:
    """An instance of the named mechanism, or a UsageError listing the valid names."""
    if name not in _declared():
        from difflib import get_close_matches

        close = get_close_matches(name, [*_declared(), *RESERVED], n=1)
        raise UsageError(f"unknown mechanism '{name}'; known: {', '.join([*mechanism_names(), *RESERVED])}",
                         hint=f"did you mean '{close[0]}'?" if close else None)
    return load(name)()
