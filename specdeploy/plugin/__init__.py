"""The plugin interfaces: mechanisms (`specdeploy.mechanisms` entry points) and engines (`specdeploy.engines`, with
their Triton layouts); built-ins and third parties register through the same entry points."""

from typing import Any

from specdeploy.plugin.base import AcceptancePrior, CheckContext, Mechanism, Unsupported, lazy_options
from specdeploy.plugin.engine import Engine
from specdeploy.plugin.layout import TritonLayout
from specdeploy.plugin.registry import engine_names, find, get_engine, get_mechanism, mechanism_names, registry

__all__ = [
    "AcceptancePrior",
    "CheckContext",
    "Engine",
    "Mechanism",
    "NoOptions",
    "TritonLayout",
    "Unsupported",
    "engine_names",
    "find",
    "get_engine",
    "get_mechanism",
    "lazy_options",
    "mechanism_names",
    "registry",
]


def __getattr__(name: str) -> Any:  # NoOptions is a pydantic model: imported only when asked for
    if name == "NoOptions":
        from specdeploy.plugin.options import NoOptions

        return NoOptions
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
