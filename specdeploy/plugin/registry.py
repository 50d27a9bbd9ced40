"""Discovery of plugins through entry points: mechanisms (`specdeploy.mechanisms`) and engines
(`specdeploy.engines`); a plugin's module is imported only when named.

Entry-point names are read for every installed plugin (cheap: `entrypoints.py` reads the metadata
folders), so two packages claiming one name are refused at once; the plugin's code loads on first use
(`validate` of an eagle3 profile imports eagle3 and its engine only).
"""

from __future__ import annotations

from difflib import get_close_matches
from functools import cache
from typing import TypeVar

from specdeploy.errors import SpecdeployError, UsageError
from specdeploy.plugin.base import Mechanism
from specdeploy.plugin.engine import Engine
from specdeploy.plugin.entrypoints import EntryPoint, entry_points
from specdeploy.plugin.layout import TritonLayout

GROUP = "specdeploy.mechanisms"
ENGINES = "specdeploy.engines"
RESERVED = ("auto", "none")
_KINDS: dict[str, tuple[str, type]] = {GROUP: ("mechanism", Mechanism), ENGINES: ("engine", Engine)}
P = TypeVar("P", Mechanism, Engine)


class PluginError(SpecdeployError):
    """A plugin is broken or two plugins claim one name."""


@cache
def _declared(group: str = GROUP) -> dict[str, EntryPoint]:
    """name -> entry point; the same name pointing at two different objects is an error naming both."""
    kind = _KINDS[group][0]
    found: dict[str, EntryPoint] = {}
    for ep in entry_points(group):
        if ep.name in RESERVED:
            raise PluginError(f"plugin {ep.value} registers the reserved name '{ep.name}'")
        if ep.name in found and found[ep.name].value != ep.value:
            first, second = sorted((found[ep.name].value, ep.value))
            raise PluginError(f"{kind} '{ep.name}' is defined by both {first} and {second}")
        found[ep.name] = ep
    return dict(sorted(found.items()))


@cache
def _load(group: str, name: str) -> type:
    """Import one plugin and check that it is what its entry point says."""
    kind, base = _KINDS[group]
    ep = _declared(group)[name]
    try:
        cls = ep.load()
    except Exception as exc:  # a broken third-party plugin gets a message, not a traceback
        raise PluginError(f"{kind} plugin '{name}' ({ep.value}) failed to load: {exc}") from exc
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise PluginError(f"entry point '{name}' ({ep.value}) is not a specdeploy.plugin.{base.__name__} subclass")
    if getattr(cls, "name", None) != name:
        raise PluginError(
            f"plugin {ep.value} defines its name as '{getattr(cls, 'name', None)}' but is registered as '{name}'"
        )
    return cls


def load(name: str) -> type[Mechanism]:
    """The named mechanism plugin's class (imports it)."""
    cls: type[Mechanism] = _load(GROUP, name)
    return cls


def registry() -> dict[str, type[Mechanism]]:
    """name -> Mechanism class for every installed plugin (imports them all: listings and docs)."""
    return {name: load(name) for name in _declared()}


def find(name: str) -> type[Mechanism] | None:
    """The named plugin's class, or None when no plugin has that name (imports only that plugin)."""
    return load(name) if name in _declared() else None


def mechanism_names() -> list[str]:
    return list(_declared())


def _unknown(kind: str, name: str, known: list[str]) -> UsageError:
    close = get_close_matches(name, known, n=1)
    return UsageError(
        f"unknown {kind} '{name}'; known: {', '.join(known)}", hint=f"did you mean '{close[0]}'?" if close else None
    )


def get_mechanism(name: str) -> Mechanism:
    """An instance of the named mechanism, or a UsageError listing the valid names."""
    if name not in _declared():
        raise _unknown("mechanism", name, [*mechanism_names(), *RESERVED])
    return load(name)()


def engine_names() -> list[str]:
    return list(_declared(ENGINES))


@cache
def get_engine(name: str) -> Engine:
    """The named engine (`runtime.backend`), or a UsageError listing the installed ones."""
    if name not in _declared(ENGINES):
        raise _unknown("engine", name, engine_names())
    engine: Engine = _load(ENGINES, name)()
    return engine


def engines() -> dict[str, Engine]:
    """name -> Engine for every installed engine (imports them all: listings, layouts, tune backends)."""
    return {name: get_engine(name) for name in engine_names()}


def engine_for_layout(layout: str) -> Engine | None:
    """The engine whose Triton layout a rendered repository is (None: no installed engine serves it)."""
    return next((e for e in engines().values() if layout in e.layouts), None)


@cache
def layout_named(layout: str) -> TritonLayout | None:
    """The named Triton layout, from the engine that declares it (None: no installed engine serves it)."""
    engine = engine_for_layout(layout)
    if engine is None:
        return None
    try:
        found = engine.triton_layout(layout)
    except NotImplementedError:
        found = None
    if not (isinstance(found, TritonLayout) and found.name == layout):
        raise PluginError(
            f"engine '{engine.name}' declares the Triton layout '{layout}' but its triton_layout "
            f"does not return a specdeploy.plugin.TritonLayout named '{layout}'"
        )
    return found


def triton_layouts() -> list[TritonLayout]:
    """Every installed engine's Triton layouts, in engine order (imports them all: `check-repo` runs their checks)."""
    names = dict.fromkeys(name for engine in engines().values() for name in engine.layouts)
    return [found for name in names if (found := layout_named(name)) is not None]
