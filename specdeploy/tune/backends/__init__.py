"""Measurement backends: `model` (the performance model, optionally noisy), `reference` (the CPU runtime, for
real), `trtllm` (the LLM API / trtllm-bench in a subprocess). Each builds a `measure(Request) -> values` and the
prior timer the factorized strategy calibrates."""

BACKENDS = ("model", "reference", "trtllm")
