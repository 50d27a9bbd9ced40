"""Backend-specific build steps: emitted configs (PyTorch), engines (TensorRT, <= 1.2.x), reference config."""

from __future__ import annotations

from specdeploy.plan.model import Stage, Step
from specdeploy.resolve.resolver import Resolved
from specdeploy.trtllm.commands import BENCH_DATASET


def backend_steps(resolved: Resolved, after: tuple[str, ...]) -> list[Step]:
    backend = resolved.profile.runtime.backend
    if backend == "pytorch":
        return [Step("emit.llm_api", Stage.EMIT, "write llm_api_options.yaml, serve.sh and bench commands",
                     depends_on=after, action="emit_llm_api",
                     outputs=("llm_api_options.yaml", "serve.sh", "bench.sh", BENCH_DATASET),
                     optional=tuple(d for d in after if d.startswith("fetch.")))]
    if backend == "reference":
        return [Step("emit.reference", Stage.EMIT, "write the reference runtime's serving config",
                     depends_on=after, action="emit_reference", outputs=("reference.yaml",))]
    from specdeploy.trtllm.engine import engine_steps

    return engine_steps(resolved, after)
