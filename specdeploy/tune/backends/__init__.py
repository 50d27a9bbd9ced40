"""The engine-free measurement backend: `model` (the performance model, optionally noisy). The measuring ones
belong to their engines (`Engine.make_tune_backend`: the CPU runtime's, TensorRT-LLM's). Each builds a
`measure(Request) -> values` and the prior timer the factorized strategy calibrates."""
