"""Deployment targets rendered from a profile: a Dockerfile, Kubernetes objects, a Slurm batch script.

`images` (NVIDIA's Triton + TensorRT-LLM images by release) · `topology` (TP x PP over nodes; the checks
`validate` runs) · `context` (typed template contexts) · `render` (files, written atomically) · `check`
(offline checks: Kubernetes OpenAPI schemas, the LeaderWorkerSet CRD schema, shellcheck).
"""
