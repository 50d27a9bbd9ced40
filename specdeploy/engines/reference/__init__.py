"""The reference engine: specdeploy's own CPU (or CUDA) runtime (`runtime/`), its measuring tune backend
(`tune.py`) and its `Engine` (`plugin.py`)."""
