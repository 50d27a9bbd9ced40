"""The serving tests drive the OpenAI endpoint (aiohttp) and Triton's gRPC client: the triton extra."""

import pytest

for _module in ("aiohttp", "grpc", "tritonclient", "numpy"):
    pytest.importorskip(_module, reason=f"the serving tests need the triton extra ({_module})")
