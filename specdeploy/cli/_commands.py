"""Imports every command module so each registers itself on the root group."""

from specdeploy.cli import build, core, render, serve, tune  # noqa: F401
