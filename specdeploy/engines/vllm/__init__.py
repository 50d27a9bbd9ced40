"""vLLM: its environment, release-line contract tables, emission and self-check (never imports vllm here)."""
