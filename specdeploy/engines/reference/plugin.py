"""The reference engine: specdeploy's CPU runtime decodes speculatively for real, behind Triton's python backend."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from specdeploy.plugin.engine import Engine, Generation, ReleaseLine

if TYPE_CHECKING:
    from specdeploy.plan.model import Step
    from specdeploy.plugin.layout import TritonLayout
    from specdeploy.resolve.resolved import Resolved


class Reference(Engine):
    name = "reference"
    summary = "specdeploy's CPU reference runtime (PyTorch + transformers), a lossless-ness oracle and the demo"
    layouts = ("reference",)
    efficiency = "torch-eager"
    tune_backend = "reference"
    measures = "the CPU reference runtime"
    cpu = True
    gpu = False
    local_models = True
    in_process = True

    def triton_layout(self, name: str) -> TritonLayout:
        from specdeploy.engines.reference.triton_layout import ReferenceLayout

        return ReferenceLayout()

    def support_line(self, line: ReleaseLine | None) -> str:
        return "cpu"  # mechanisms declare `reference: ("cpu",)`

    def doctor(self, probe: Any) -> tuple[dict[str, str], list[str]]:
        """The CPU runtime: installed, and on a transformers it is tested on (it refuses others)."""
        from importlib.metadata import version
        from importlib.util import find_spec

        from specdeploy.engines.reference.runtime.stack import TESTED, parse, supported_range

        if not (find_spec("torch") and find_spec("transformers")):
            return {"reference_runtime": "not installed (pip install 'specdeploy[reference]')"}, []
        found = version("transformers")
        if TESTED[0] <= parse(found) <= TESTED[1]:
            return {"reference_runtime": f"available (transformers {found})"}, []
        return {
            "reference_runtime": f"refuses transformers {found}: untested "
            f"(pip install 'transformers{supported_range()}')"
        }, []

    def generate(
        self, resolved: Resolved, prompt: str, *, mechanism: str, draft_len: int, max_tokens: int
    ) -> Generation:
        from specdeploy.engines.reference.runtime import generate_text, load_pair_for

        spec = resolved.profile.speculative
        pair = load_pair_for(resolved.profile.target.model, mechanism, spec.draft_model)
        result = generate_text(pair, prompt, max_tokens, mechanism=mechanism, draft_len=max(draft_len, 1), chat=True)
        return Generation(result.text, result.tokens, mechanism, draft_len, result.stats.to_dict())

    def tokenizer_folder(self, ref: str) -> str:
        from specdeploy.engines.reference.runtime.models import resolve_target_folder

        return str(resolve_target_folder(ref))

    def build_steps(self, resolved: Resolved, after: tuple[str, ...]) -> list[Step]:
        from specdeploy.plan.model import Stage, Step

        return [
            Step(
                "emit.reference",
                Stage.EMIT,
                "write the reference runtime's serving config",
                depends_on=after,
                action="emit_reference",
                outputs=("reference.yaml",),
            )
        ]

    def actions(self) -> dict[str, str]:
        return {"emit_reference": "specdeploy.engines.reference.actions:emit_reference"}

    def measuring(self, resolved: Resolved) -> tuple[bool, str]:
        from importlib.util import find_spec

        if find_spec("torch") and find_spec("transformers"):
            return True, "the CPU reference runtime measures"
        return False, "the CPU reference runtime (torch, transformers) is not installed"

    def make_tune_backend(self, resolved: Resolved, setup: Any, work: Path) -> Any:
        from specdeploy.engines.reference.tune import ReferenceBackend

        return ReferenceBackend(resolved, setup)
