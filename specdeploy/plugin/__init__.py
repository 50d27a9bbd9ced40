"""Mechanism plugins: built-ins and third parties register through the `specdeploy.mechanisms` entry points."""

from typing import Any

from specdeploy.plugin.base import CheckContext, Mechanism, lazy_options
from specdeploy.plugin.registry import find, get_mechanism, mechanism_names, registry

__all__ = ["CheckContext", "Mechanism", "NoOptions", "find", "get_mechanism", "lazy_options", "mechanism_names",
           "registry"]


def __getattr__(name: str) -> Any:  # NoOptions is a pydantic model: imported only when asked for
    if name == "NoOptions":
        from specdeploy.plugin.options import NoOptions

        return NoOptions
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
