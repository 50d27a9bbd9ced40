"""vLLM served through Triton, the `vllm` layout's (triton_layout.py) `<model>/1/model.json`: the keyword arguments
of vLLM's `AsyncEngineArgs` that Triton's vLLM backend (triton-inference-server/vllm_backend) passes on. What the
backend reads and declares is tables/triton-vllm-r24.10.json, each fact citing its upstream file at r24.10 (Triton
2.51); docs/engines/vllm.md, "Through Triton".

model.json carries what vllm-serve.yaml carries (emit.py: the speculative config, its per-batch-size schedule, the
serving limits), less the OpenAI server's own options. The backend passes the file to vLLM as it is, with no
variable expanded, so models are named as a Triton host finds them: a hub id (pinned by `revision`), an absolute
folder, or a model shipped inside specdeploy as its export for vLLM on this machine.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from specdeploy.engines.vllm.contract import TABLES, line_for

TABLE = TABLES / "triton-vllm-r24.10.json"
SERVER_ONLY = ("host", "port")
"""vllm-serve.yaml keys that are the OpenAI server's (`FrontendArgs`), not the engine's."""


@lru_cache(maxsize=1)
def contract() -> dict[str, Any]:
    """The backend's contract table (tables/triton-vllm-r24.10.json)."""
    return dict(json.loads(TABLE.read_text()))


def _model_ref(ref: str, revision: str | None) -> tuple[str, str | None]:
    """(what vLLM loads, the revision to pin): a shipped model's export, an absolute folder, else the hub id."""
    from specdeploy.execute.fetch import reference_path

    if reference_path(ref) is not None:
        from specdeploy.engines.vllm.export import export

        return str(export(ref)), None
    path = Path(ref).expanduser()
    return (str(path.resolve()), None) if path.is_dir() else (ref, revision)


def engine_args(resolved: Any, *, draft_len: int, schedule: Any, max_concurrency: int | None) -> dict[str, Any]:
    """model.json: the emitted `vllm serve` settings as AsyncEngineArgs keyword arguments."""
    from specdeploy.engines.vllm.actions import emit_for

    profile = resolved.profile
    spec = profile.speculative
    target, target_revision = _model_ref(profile.target.model, profile.target.revision)
    drafter, drafter_revision = _model_ref(spec.draft_model, spec.draft_revision) if spec.draft_model else (None, None)
    out, _ = emit_for(
        resolved,
        draft_len,
        schedule,
        max_concurrency,
        target=target,
        drafter=drafter,
        target_revision=target_revision,
        drafter_revision=drafter_revision,
    )
    return {key.replace("-", "_"): value for key, value in out.serve.items() if key not in SERVER_ONLY}


def check_engine_args(args: dict[str, Any], release: str) -> list[str]:
    """model.json keys the release's AsyncEngineArgs has no field for, as far as its contract table says (vLLM
    would raise TypeError at load); the speculative config's fields against its table."""
    line = line_for(release)
    known = {key.replace("-", "_") for key in line.serve_args if key not in SERVER_ONLY}
    problems = [
        f"{key}: not an AsyncEngineArgs field specdeploy's vLLM {line.releases} table knows"
        for key in args
        if key not in known
    ]
    spec = args.get("speculative_config")
    if spec is not None and not isinstance(spec, dict):
        problems.append("speculative_config: not a mapping")
    elif isinstance(spec, dict):
        problems += [
            f"speculative_config.{key}: not a SpeculativeConfig field of vLLM {line.releases}"
            for key in spec
            if key not in line.fields
        ]
        method = spec.get("method")
        if method is not None and not line.has_method(str(method)):
            problems.append(f"speculative_config.method {method!r}: vLLM {line.releases} has no such method")
    return problems
