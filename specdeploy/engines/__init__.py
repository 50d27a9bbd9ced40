"""The engines specdeploy ships, each one package registered through the `specdeploy.engines` entry points
exactly as a third-party engine would register its own (`runtime.backend` names one; see docs/architecture.md)."""
