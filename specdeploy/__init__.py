"""specdeploy: plan, build, tune and serve LLMs with speculative decoding on NVIDIA GPUs."""

__version__ = "0.5.0.dev0"
