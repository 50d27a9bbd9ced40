"""Execution: run a Plan's steps (subprocess wrapper, content-hash stamps, locks, manifest)."""
