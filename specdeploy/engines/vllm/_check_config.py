"""Run by vLLM's own Python, by path (specdeploy/engines/vllm/selfcheck.py): would `vllm serve` accept these
arguments? It parses them with the OpenAI server's own parser, builds the engine config the server would build
(no weights are loaded, no device is needed) and expands a per-batch-size schedule the way the scheduler does at
start, which create_engine_config does not check.

argv: `vllm serve --config` files (.yaml), each checked as `--config FILE` after one import; a `.json` file is the
`model.json` of Triton's vLLM backend, checked as that backend builds it: `AsyncEngineArgs(**json.load(file))`
(triton-inference-server/vllm_backend src/model.py @ r24.10).
stdout, last line: MARK + JSON {ok, stage, error, version, import_s, results: [{ok, stage, error, speculative,
check_s}, ...]}.
Imports only vLLM and the standard library: specdeploy is not installed in vLLM's environment.
"""

import contextlib
import io
import json
import sys
import time
from pathlib import Path
from typing import Any

MARK = "specdeploy-vllm-check: "
SPEC_FIELDS = (
    "method",
    "model",
    "num_speculative_tokens",
    "prompt_lookup_min",
    "prompt_lookup_max",
    "draft_tensor_parallel_size",
    "num_speculative_tokens_per_batch_size",
)


def _parse(parser: Any, argv: list[str]) -> Any:
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            return parser.parse_args(argv)
        except SystemExit:
            lines = err.getvalue().strip().splitlines()
            raise ValueError(lines[-1] if lines else "the arguments were refused") from None


def check(config_files: list[str]) -> dict[str, Any]:
    """One answer per file, after one import of vLLM (it costs seconds to a minute; a check well under one)."""
    out: dict[str, Any] = {"ok": False, "stage": "import", "results": []}
    start = time.perf_counter()
    try:
        import vllm
        from vllm.engine.arg_utils import AsyncEngineArgs
        from vllm.entrypoints.launchers.cli_args import make_arg_parser, validate_parsed_serve_args
        from vllm.usage.usage_lib import UsageContext
        from vllm.utils.argparse_utils import FlexibleArgumentParser
        from vllm.v1.spec_decode.dynamic.utils import build_dynamic_sd_schedule_lookup
    except Exception as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"
        return out
    out.update(ok=True, stage="imported", version=vllm.__version__, import_s=round(time.perf_counter() - start, 3))
    for path in config_files:
        result: dict[str, Any] = {"ok": False, "stage": "arguments"}
        checked = time.perf_counter()
        try:
            if path.endswith(".json"):
                engine_args = AsyncEngineArgs(**json.loads(Path(path).read_text(encoding="utf-8")))
            else:
                args = _parse(make_arg_parser(FlexibleArgumentParser(prog="vllm serve")), ["--config", path])
                validate_parsed_serve_args(args)
                engine_args = AsyncEngineArgs.from_cli_args(args)
            result["stage"] = "engine config"
            config = engine_args.create_engine_config(usage_context=UsageContext.OPENAI_API_SERVER)
            spec = config.speculative_config
            if spec is not None and spec.num_speculative_tokens_per_batch_size:
                result["stage"] = "schedule"
                build_dynamic_sd_schedule_lookup(
                    spec.num_speculative_tokens_per_batch_size,
                    vllm_max_batch_size=config.scheduler_config.max_num_seqs,
                    vllm_num_speculative_tokens=spec.num_speculative_tokens,
                )
            result["speculative"] = None if spec is None else {k: getattr(spec, k) for k in SPEC_FIELDS}
            result["ok"] = True
        except Exception as exc:  # vLLM's own refusal is the answer, whatever its type
            result["error"] = f"{type(exc).__name__}: {exc}"
        result["check_s"] = round(time.perf_counter() - checked, 3)
        out["results"].append(result)
    return out


if __name__ == "__main__":
    print("\n" + MARK + json.dumps(check(sys.argv[1:]), default=str), flush=True)
