"""The `trtllm` backend: TensorRT-LLM at the process boundary. Each measurement writes an options YAML (restart
per K: the PyTorch LLM cannot change max_draft_len live, docs/design/trtllm.md §5) and runs `trtllm-bench throughput
--report_json --iteration_log`, or, for the acceptance histogram, the LLM-API driver (`tune_driver`), through
`run_process`. Parsing lives in `tune_parse` (tested on recorded/synthetic outputs; TRT-LLM cannot run here)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml

from specdeploy.engines.trtllm.tune_parse import (
    correct_acceptance,
    histogram_from_chunks,
    parse_iteration_stats,
    read_run,
)
from specdeploy.metrics import OUTPUT_THROUGHPUT
from specdeploy.resolve.resolved import Resolved
from specdeploy.tune.setup import TuneSetup
from specdeploy.tune.types import PLAIN_THROUGHPUT, Request


def check_installed(resolved: Resolved) -> None:
    """Without TensorRT-LLM each measurement's subprocess would fail ("the acceptance run failed twice")."""
    from specdeploy.errors import MissingDependency
    from specdeploy.execute.needs import install_hint, installed_trtllm

    if installed_trtllm() is None:
        wanted = resolved.profile.runtime.trtllm_version
        raise MissingDependency(
            f"--backend trtllm needs TensorRT-LLM {wanted}, which is not installed here",
            hint=f"{install_hint(wanted)}; or --backend model (predicted)",
        )


class TrtllmBackend:
    def __init__(self, resolved: Resolved, setup: TuneSetup, work: Path, timeout_s: float = 3600.0) -> None:
        self.resolved, self.setup, self.work, self.timeout_s = resolved, setup, work, timeout_s

    def options(self, k: int, schedule: list[list[int]] | None = None) -> dict[str, Any]:
        from specdeploy.engines.trtllm.llm_api import llm_api_options

        opts = llm_api_options(self.resolved, draft_len=max(k, 1), schedule=schedule, tuning=True)
        if k == 0 and not schedule:
            opts.pop("speculative_config", None)  # plain decoding
        return opts

    def argv(
        self,
        req: Request,
        folder: Path,
        k: int,
        schedule: list[list[int]] | None = None,
        concurrency: int | None = None,
    ) -> list[str]:
        from specdeploy.engines.trtllm.commands import bench_argv

        (folder / "options.yaml").write_text(yaml.safe_dump(self.options(k, schedule), sort_keys=False))
        self.dataset(folder / "dataset.jsonl")
        c = concurrency or req.concurrency
        return bench_argv(
            self.resolved,
            self.resolved.profile.target.model,
            concurrency=c,
            dataset="dataset.jsonl",
            options_file="options.yaml",
            num_requests=max(self.setup.prompts, 2 * c),
        )

    def dataset(self, path: Path) -> None:
        """trtllm-bench's JSONL: task_id, prompt, output_tokens (docs/design/trtllm.md §7)."""
        from specdeploy.engines.trtllm.commands import bench_dataset
        from specdeploy.prompts import sample_prompts

        path.write_text(bench_dataset(sample_prompts(self.setup.dataset, self.setup.prompts), self.setup.output_len))

    def _run(self, req: Request, argv: list[str], folder: Path) -> Any:
        from specdeploy.execute.process import child_env, run_process

        return run_process(
            argv,
            log_path=folder / "run.log",
            env=child_env(),
            cwd=folder,
            timeout=self.timeout_s,
            step_id=f"tune {req.key}",
        )

    def _bench(
        self,
        req: Request,
        k: int,
        schedule: list[list[int]] | None = None,
        concurrency: int | None = None,
        tag: str = "",
    ) -> dict[str, Any]:
        folder = self.work / (req.key.replace("/", "_") + tag)
        folder.mkdir(parents=True, exist_ok=True)
        proc = self._run(req, self.argv(req, folder, k, schedule, concurrency), folder)
        values = read_run(folder / "bench_report.json", folder / "iteration.log")
        values["cost_s"] = proc.duration_s
        return values

    def __call__(self, req: Request) -> dict[str, Any]:
        if req.kind == "e2e":
            return self._bench(req, req.k)
        if req.kind == "cost":
            values = self._bench(req, req.k)
            return {"step_s": values["iter_step_s"], "cost_s": values["cost_s"]}
        if req.kind == "acceptance":
            return self._acceptance(req)
        pairs = [list(p) for p in req.schedule]
        ranges = [[c, (pairs[i + 1][0] - 1 if i + 1 < len(pairs) else c), k] for i, (c, k) in enumerate(pairs)]
        runs = [
            (c, k, correct_acceptance(self._bench(req, req.k, ranges, c, f"_c{c}"), configured_k=req.k, effective_k=k))
            for c, k in pairs
        ]
        base = [self._bench(req, 0, None, c, f"_off{c}") for c, _ in pairs]
        return {
            OUTPUT_THROUGHPUT: sum(v[OUTPUT_THROUGHPUT] for *_, v in runs) / len(runs),
            PLAIN_THROUGHPUT: sum(v[OUTPUT_THROUGHPUT] for v in base) / len(base),
            "per_concurrency": [{"concurrency": c, "k": k, **v} for c, k, v in runs],
            "cost_s": sum(v["cost_s"] for *_, v in runs) + sum(v["cost_s"] for v in base),
        }

    def _acceptance(self, req: Request) -> dict[str, Any]:
        folder = self.work / req.key.replace("/", "_")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "options.yaml").write_text(yaml.safe_dump(self.options(req.k), sort_keys=False))
        self.dataset(folder / "dataset.jsonl")
        argv = [
            sys.executable,
            "-m",
            "specdeploy.engines.trtllm.tune_driver",
            "--model",
            self.resolved.profile.target.model,
            "--options",
            "options.yaml",
            "--dataset",
            "dataset.jsonl",
            "--concurrency",
            str(req.concurrency),
            "--out",
            "acceptance.json",
        ]
        proc = self._run(req, argv, folder)
        data = json.loads((folder / "acceptance.json").read_text())
        stats = parse_iteration_stats(data.get("iteration_stats", []))
        return {
            "hist": histogram_from_chunks(data["chunk_lengths"], req.k),
            "al": stats.get("al"),
            "acceptance_rate": stats.get("acceptance_rate"),
            "per_category": {
                cat: histogram_from_chunks(chunks, req.k) for cat, chunks in data.get("by_category", {}).items()
            },
            "cost_s": proc.duration_s,
        }
