"""TensorRT-LLM facts per release line, and what specdeploy emits for each (never imports tensorrt_llm)."""
