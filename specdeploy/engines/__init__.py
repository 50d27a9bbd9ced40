"""The engines specdeploy ships: one package per inference engine it emits for, builds with, measures and serves,
each registered through the `specdeploy.engines` entry points exactly as a third-party engine would register its
own (`runtime.backend` names one; see docs/architecture.md)."""
