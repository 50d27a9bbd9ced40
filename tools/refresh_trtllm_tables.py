"""Regenerate specdeploy/trtllm/tables/trtllm-<version>.json from a real TensorRT-LLM installation.

Run on a host with the wheel (NGC image or GPU box): `python tools/refresh_trtllm_tables.py [--out DIR]`.
Introspects the pydantic LLM-API models (TorchLlmArgs, every DecodingBaseConfig subclass, KvCacheConfig,
CudaGraphConfig) and the argparse/click parsers of trtllm-build, trtllm-bench and trtllm-serve; items
that were marked `unconfirmed` in the hand-written table become confirmed (the flag disappears).
Review the diff before committing: the tests then check every emitted key and flag against it.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TYPES = {"int": "int", "float": "float", "bool": "bool", "str": "str", "Path": "path"}


def _kind(annotation: Any) -> str:
    text = str(annotation)
    if "Dict[int, int]" in text or "dict[int, int]" in text:
        return "dict[int,int]"
    if "List[List[int]]" in text or "list[list[int]]" in text:
        return "list[list[int]]"
    if "Set[int]" in text or "set[int]" in text:
        return "set[int]"
    if "List[int]" in text or "list[int]" in text:
        return "list[int]"
    for name, kind in TYPES.items():
        if re.search(rf"\b{name}\b", text):
            return kind
    return "object"


def _fields(model: Any) -> dict[str, Any]:
    out = {}
    for name, info in model.model_fields.items():
        entry: dict[str, Any] = {"type": _kind(info.annotation)}
        if info.default is not None and isinstance(info.default, (int, float, str, bool)):
            entry["default"] = info.default
        alias = info.validation_alias
        if alias:
            entry["aliases"] = [str(a) for a in getattr(alias, "choices", [alias])]
        out[name] = entry
    return out


def _help_options(cmd: list[str]) -> dict[str, Any]:
    """Options of a CLI from its --help text (works for argparse and click)."""
    text = subprocess.run([*cmd, "--help"], capture_output=True, text=True, check=False).stdout
    options: dict[str, Any] = {}
    for match in re.finditer(r"(--[a-z0-9_\-]+)(?:[ =]\{([^}]*)\}|[ =]([A-Z_]+))?", text):
        name, choices, metavar = match.groups()
        entry: dict[str, Any] = {"type": "str" if (choices or metavar) else "flag"}
        if choices:
            entry["choices"] = choices.split(",")
        options.setdefault(name, entry)
    options.pop("--help", None)
    return {"options": options}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "specdeploy" / "trtllm" / "tables")
    args = parser.parse_args()
    import tensorrt_llm
    from tensorrt_llm.llmapi import llm_args as A

    version = tensorrt_llm.__version__
    decoding = {}
    for name in dir(A):
        cls = getattr(A, name)
        if isinstance(cls, type) and issubclass(cls, A.DecodingBaseConfig) and cls is not A.DecodingBaseConfig:
            dtype = getattr(cls, "decoding_type", None)
            key = dtype if isinstance(dtype, str) else name.removesuffix("DecodingConfig")
            base = set(A.DecodingBaseConfig.model_fields)
            decoding[key] = {"class": name, "fields": {k: v for k, v in _fields(cls).items() if k not in base}}
    major_minor = ".".join(version.split(".")[:2])
    table = {
        "trtllm_version": version, "line": "1.2" if major_minor == "1.2" else "1.3",
        "generated_by": f"tools/refresh_trtllm_tables.py on tensorrt_llm {version}",
        "sources": {"llm_args": A.__file__, "cli": "--help of trtllm-serve, trtllm-bench, trtllm-build"},
        "forbidden_fields": [],
        "decoding_base": _fields(A.DecodingBaseConfig), "decoding": decoding,
        "llm_args": _fields(A.TorchLlmArgs),
        "nested": {"kv_cache_config": _fields(A.KvCacheConfig), "cuda_graph_config": _fields(A.CudaGraphConfig)},
        "cli": {"trtllm-serve": {"positional": ["model"], **_help_options(["trtllm-serve", "serve"])},
                "trtllm-bench": {**_help_options(["trtllm-bench"]), "subcommands": ["build", "throughput", "latency"]},
                "trtllm-bench throughput": _help_options(["trtllm-bench", "--model", "x", "throughput"]),
                "trtllm-bench latency": _help_options(["trtllm-bench", "--model", "x", "latency"])},
    }
    if major_minor == "1.2":
        table["cli"]["trtllm-build"] = _help_options(["trtllm-build"])
    name = f"trtllm-{version}" if major_minor == "1.2" else "trtllm-1.3"
    path = args.out / f"{name}.json"
    if path.is_file():  # keep the examples/ converter tables: they have no --help-free source here
        old = json.loads(path.read_text())
        table["cli"].update({k: v for k, v in old.get("cli", {}).items() if k.startswith("examples/")})
    path.write_text(json.dumps(table, indent=1) + "\n")
    print(f"wrote {path}; review `git diff` and rerun tests/unit/trtllm", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
