"""Mechanism plugins: built-ins and third parties register through the `specdeploy.mechanisms` entry points."""

from specdeploy.plugin.base import CheckContext, Mechanism, NoOptions
from specdeploy.plugin.registry import find, get_mechanism, mechanism_names, registry

__all__ = ["CheckContext", "Mechanism", "NoOptions", "find", "get_mechanism", "mechanism_names", "registry"]
