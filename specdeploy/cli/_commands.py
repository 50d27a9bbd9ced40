"""Imports every command module so each registers itself on the root group."""

from specdeploy.cli import core  # noqa: F401
from specdeploy.cli import build  # noqa: F401
from specdeploy.cli import render  # noqa: F401
from specdeploy.cli import tune  # noqa: F401
