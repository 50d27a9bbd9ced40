"""TensorRT-LLM as two engines sharing its release lines and contract tables: `pytorch` (the LLM API and
`trtllm-serve`, the 1.2 and 1.3 lines) and `tensorrt` (TensorRT engines built by `trtllm-build`, 1.2.x only)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specdeploy.issues import Issue
from specdeploy.plugin.engine import Engine, RangeNote

if TYPE_CHECKING:
    from specdeploy.engines.trtllm.versions import VersionLine
    from specdeploy.plan.model import Step
    from specdeploy.plugin.base import CheckContext, Mechanism
    from specdeploy.plugin.layout import TritonLayout
    from specdeploy.profile.schema import Profile
    from specdeploy.resolve.resolved import Resolved


class _Trtllm(Engine):
    version_field = "trtllm_version"
    product = "TensorRT-LLM"
    efficiency = "trtllm"
    tune_backend = "trtllm"
    measures = "TensorRT-LLM (trtllm-bench and the LLM API)"

    def release_line(self, profile: Profile) -> VersionLine:
        from specdeploy.engines.trtllm.versions import version_line

        return version_line(profile.runtime.trtllm_version)

    def check_release(self, value: str) -> None:
        from specdeploy.engines.trtllm.versions import version_line

        version_line(value)  # raises ValueError naming the known lines

    def schedule_clamp(self, line: VersionLine) -> str | None:
        if not line.schedule_key_one_required:
            return None
        return (
            f"TRT-LLM {line.name} needs schedule[1] = max_draft_len: a K tuned above concurrency 1 that "
            "exceeds the K at concurrency 1 is clamped to it"
        )

    def range_notes(self, mechanism: str, lines: tuple[str, ...]) -> list[RangeNote]:
        from specdeploy.engines.trtllm.declare import range_notes

        return range_notes(mechanism, lines, self.name)

    def check_installed(self, resolved: Resolved) -> None:
        from specdeploy.engines.trtllm.selfcheck import installed_release, require_pinned

        require_pinned(resolved.profile.runtime.trtllm_version, installed_release())

    def serving_args(
        self, resolved: Resolved, *, draft_len: int, schedule: Any, max_concurrency: int | None
    ) -> dict[str, Any]:
        from specdeploy.engines.trtllm.llm_api import llm_api_options

        return llm_api_options(resolved, draft_len=draft_len, schedule=schedule, max_concurrency=max_concurrency)

    def serving_notes(self, resolved: Resolved, args: dict[str, Any]) -> list[str]:
        from specdeploy.engines.trtllm.llm_api import serving_notes

        return serving_notes(resolved, args)

    def check_serving_args(self, args: dict[str, Any], release: str) -> list[str]:
        from specdeploy.engines.trtllm.tables import check_llm_api_options, table_for
        from specdeploy.engines.trtllm.versions import version_line

        return list(check_llm_api_options(args, table_for(version_line(release))))

    def clamp_tuned(self, lower: dict[int, int], release: str) -> tuple[dict[int, int], list[str]]:
        from specdeploy.engines.trtllm.schedule import clamp_tuned

        return clamp_tuned(lower, release)

    def emitted_schedule(
        self, ranges: list[tuple[int, int, int]], max_concurrency: int, release: str
    ) -> tuple[dict[str, Any] | None, list[str]]:
        from specdeploy.engines.trtllm.schedule import emitted_schedule

        return emitted_schedule(ranges, max_concurrency, release)

    def doctor(self, probe: Any) -> tuple[dict[str, str], list[str]]:
        from specdeploy.engines.trtllm.selfcheck import trtllm_report

        report = trtllm_report(probe.trtllm_version)
        return report, [] if report["trtllm_contract"] != "-" else ["TensorRT-LLM"]  # "-": absent or broken

    def kv_cache_fp8(self, profile: Profile) -> bool:
        from specdeploy.engines.trtllm.engine import fp8_kv_cache

        return fp8_kv_cache(profile)

    def actions(self) -> dict[str, str]:
        return {
            "emit_llm_api": "specdeploy.engines.trtllm.actions:emit_llm_api",
            "emit_engine": "specdeploy.engines.trtllm.actions:emit_engine",
        }

    def measuring(self, resolved: Resolved) -> tuple[bool, str]:
        """TensorRT-LLM measures where it is installed AND a GPU answers."""
        from specdeploy.execute.needs import installed_trtllm
        from specdeploy.resolve.probe import probe_nvml

        if installed_trtllm() is None:
            return False, "TensorRT-LLM is not installed"
        names, _, _, error = probe_nvml()
        return (True, "TensorRT-LLM and a GPU measure") if names else (False, f"no NVIDIA GPU ({error})")

    def check_tune_backend(self, resolved: Resolved) -> None:
        from specdeploy.engines.trtllm.tune import check_installed

        check_installed(resolved)

    def make_tune_backend(self, resolved: Resolved, setup: Any, work: Path) -> Any:
        from specdeploy.engines.trtllm.tune import TrtllmBackend

        return TrtllmBackend(resolved, setup, work)


class Pytorch(_Trtllm):
    name = "pytorch"
    summary = "TensorRT-LLM's PyTorch backend: LLM-API options for trtllm-serve or Triton's llmapi model"
    layouts = ("llmapi",)
    auto_mechanism = True

    def triton_layout(self, name: str) -> TritonLayout:
        from specdeploy.engines.trtllm.triton_layouts import LlmApi

        return LlmApi()

    def profile_issues(self, ctx: CheckContext, mechanism: Mechanism | None) -> Iterator[Issue]:
        from specdeploy.engines.trtllm.profile_rules import contract_issues, quantization_issues

        yield from contract_issues(ctx, mechanism)
        yield from quantization_issues(ctx)

    def preview(self, resolved: Resolved) -> dict[str, str]:
        from specdeploy.engines.trtllm.actions import preview

        return preview(resolved)

    def build_steps(self, resolved: Resolved, after: tuple[str, ...]) -> list[Step]:
        from specdeploy.engines.trtllm.commands import BENCH_DATASET
        from specdeploy.plan.model import Stage, Step

        return [
            Step(
                "emit.llm_api",
                Stage.EMIT,
                "write llm_api_options.yaml, serve.sh and bench commands",
                depends_on=after,
                action="emit_llm_api",
                outputs=("llm_api_options.yaml", "serve.sh", "bench.sh", BENCH_DATASET),
                optional=tuple(d for d in after if d.startswith("fetch.")),
            )
        ]


class Tensorrt(_Trtllm):
    name = "tensorrt"
    summary = "TensorRT-LLM engines (convert_checkpoint, trtllm-build; 1.2.x) behind Triton's tensorrtllm backend"
    layouts = ("engine",)

    def triton_layout(self, name: str) -> TritonLayout:
        from specdeploy.engines.trtllm.triton_layouts import Engines

        return Engines()

    def profile_issues(self, ctx: CheckContext, mechanism: Mechanism | None) -> Iterator[Issue]:
        runtime = ctx.profile.runtime
        if ctx.line is not None and not ctx.line.engine_backend:  # type: ignore[attr-defined]
            yield Issue(
                ("runtime", "backend"),
                f"TensorRT-LLM {runtime.trtllm_version} has no engine backend (removed in the 1.3 line)",
                "use backend: pytorch, or trtllm_version: 1.2.1 for engines",
            )

    def triton_params(self, resolved: Resolved) -> dict[str, Any]:
        from specdeploy.engines.trtllm.declare import build_of
        from specdeploy.engines.trtllm.engine import engine_draft_len

        declared = build_of(resolved.profile.speculative.mechanism)
        if declared is None:
            return {}
        target = declared.triton(resolved.loaded.options) if declared.triton is not None else {}
        return {
            "target": target,
            "draft_engine": declared.draft_engine,
            "engine_max_draft_len": engine_draft_len(resolved),
        }

    def repo_draft_len(self, params: dict[str, str]) -> tuple[int, str, str] | None:
        from specdeploy.engines.trtllm.declare import builds

        return next((n for b in builds() if b.repo_draft_len and (n := b.repo_draft_len(params)) is not None), None)

    def build_steps(self, resolved: Resolved, after: tuple[str, ...]) -> list[Step]:
        from specdeploy.engines.trtllm.engine import engine_steps

        return engine_steps(resolved, after)
