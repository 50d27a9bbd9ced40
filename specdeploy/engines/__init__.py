"""Engines: one package per inference engine specdeploy emits for, builds with, measures and serves."""
