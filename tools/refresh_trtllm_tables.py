"""Compare specdeploy's contract table for the installed TensorRT-LLM with that installation's own classes.

Run where the wheel is installed (NGC image, or a Linux+CUDA host with NVIDIA's index; see
specdeploy/engines/trtllm/README.md): `python tools/refresh_trtllm_tables.py [--json] [--cli]`. It imports
`tensorrt_llm.llmapi.llm_args` (TorchLlmArgs, every DecodingBaseConfig subclass by its decoding_type,
KvCacheConfig, CudaGraphConfig) and, with --cli, reads `trtllm-serve/-bench/-build --help`; it prints what
differs from `table_for(version_line(tensorrt_llm.__version__))`. It writes nothing: transcribe each
difference into specdeploy/engines/trtllm/tables/*.json with its source (this release, this file), or a since/until.
Exit 0 when nothing differs, 1 when something does, 2 when TensorRT-LLM is missing or has no contract range.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import inspect
import json
import re
import sys
import textwrap
import typing
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from specdeploy.execute.process import NoAnswer, ask, child_env  # noqa: E402 - this checkout first

TYPES = {"int": "int", "float": "float", "bool": "bool", "str": "str", "Path": "str"}
SAME = {"path": "str", "object|null": "object", "set[int]": "list[int]"}


def kind(annotation: Any) -> str:
    """A pydantic annotation in the tables' type vocabulary."""
    text = str(annotation).replace("typing.", "")
    for pattern, name in (
        ("dict[int, int]", "dict[int,int]"),
        ("list[list[int]]", "list[list[int]]"),
        ("set[int]", "list[int]"),
        ("list[int]", "list[int]"),
    ):
        if pattern in text.lower():
            return name
    if "dict[" in text.lower() or "Dict[" in text:
        return "object"
    if text.startswith("Literal[") or "Literal[" in text:
        return "str"
    for name, out in TYPES.items():
        if re.search(rf"\b{name}\b", text):
            return out
    return "object"


def fields(model: Any, skip: set[str] = frozenset()) -> dict[str, dict[str, Any]]:  # type: ignore[assignment]
    out = {}
    for name, info in model.model_fields.items():
        if name in skip or name == "decoding_type":
            continue
        entry: dict[str, Any] = {"type": kind(info.annotation)}
        if isinstance(info.default, (int, float, str, bool)):
            entry["default"] = info.default
        out[name] = entry
    return out


def _literal(cls: Any) -> str:
    field = cls.model_fields.get("decoding_type")
    args = typing.get_args(field.annotation) if field is not None else ()
    return str(args[0]) if args else str(getattr(cls, "decoding_type", cls.__name__))


def from_dict_keys(base: Any) -> dict[str, str]:
    """`decoding_type` -> class name, from the map in `DecodingBaseConfig.from_dict` where the release parses
    `speculative_config` through one (1.3.0rc2: key 'DraftTarget' while the class says 'Draft_Target'); empty
    where each class declares its own Literal (1.3.0rc8 on)."""
    method = vars(base).get("from_dict")
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(getattr(method, "__func__", method))))
    except (OSError, TypeError):
        return {}
    return {
        key.value: value.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Dict)
        for key, value in zip(node.keys, node.values)
        if isinstance(key, ast.Constant) and isinstance(key.value, str) and isinstance(value, ast.Name)
    }


def introspect(module: Any) -> dict[str, Any]:
    """The installed llm_args in the tables' shape (no sources: those are a person's to write), each decoding
    class under the `decoding_type` the release accepts in YAML."""
    base = module.DecodingBaseConfig
    classes = {
        cls.__name__: cls
        for cls in vars(module).values()
        if isinstance(cls, type) and issubclass(cls, base) and cls is not base
    }
    keys = from_dict_keys(base)
    named = (
        {k: classes[n] for k, n in keys.items() if n in classes} if keys else {_literal(c): c for c in classes.values()}
    )
    decoding = {key: {"fields": fields(cls, set(base.model_fields))} for key, cls in named.items()}
    return {
        "decoding_base": fields(base),
        "decoding": decoding,
        "llm_args": fields(module.TorchLlmArgs),
        "nested": {
            "kv_cache_config": fields(module.KvCacheConfig),
            "cuda_graph_config": fields(module.CudaGraphConfig),
        },
    }


def _compare(where: str, installed: dict[str, Any], table: dict[str, Any]) -> list[str]:
    table = {k: v for k, v in table.items() if k != "decoding_type" and "alias_of" not in v}
    lines = [
        f"+ {where}.{k} ({v['type']}): in the installed class, not in the table"
        for k, v in installed.items()
        if k not in table
    ]
    lines += [f"- {where}.{k}: in the table, not in the installed class" for k in table if k not in installed]
    for name in sorted(set(installed) & set(table)):
        mine, theirs = table[name], installed[name]
        if SAME.get(mine["type"], mine["type"]) != SAME.get(theirs["type"], theirs["type"]):
            lines.append(f"~ {where}.{name}: type {mine['type']} in the table, {theirs['type']} installed")
        if "default" in mine and "default" in theirs and mine["default"] != theirs["default"]:
            lines.append(f"~ {where}.{name}: default {mine['default']!r} in the table, {theirs['default']!r} installed")
    return lines


def diff(installed: dict[str, Any], table: dict[str, Any]) -> list[str]:
    """Every name, type and default that differs between an introspected llm_args and a range's table."""
    lines = _compare("llm_args", installed["llm_args"], table["llm_args"])
    lines += _compare("decoding_base", installed["decoding_base"], table["decoding_base"])
    for name in ("kv_cache_config", "cuda_graph_config"):
        lines += _compare(name, installed["nested"].get(name, {}), table["nested"].get(name, {}))
    mine, theirs = table["decoding"], installed["decoding"]
    lines += [f"+ decoding.{k}: decoding_type installed, not in the table" for k in theirs if k not in mine]
    lines += [f"- decoding.{k}: decoding_type in the table, not installed" for k in mine if k not in theirs]
    for name in sorted(set(mine) & set(theirs)):
        lines += _compare(f"decoding.{name}", theirs[name]["fields"], mine[name]["fields"])
    return lines


def cli_diff(table: dict[str, Any]) -> list[str]:
    """Flags of each table command against its installed `--help` (argparse or click)."""
    lines = []
    for key in ("trtllm-serve", "trtllm-build", "trtllm-bench throughput"):
        if key not in table["cli"]:
            continue
        argv = key.split() if key != "trtllm-bench throughput" else ["trtllm-bench", "--model", "x", "throughput"]
        try:
            text = ask([*argv, "--help"], env=child_env(), timeout=300).stdout
        except NoAnswer as exc:
            lines.append(f"? {key}: {exc}")
            continue
        flags = set(re.findall(r"(--[a-z0-9_\-]+)", text)) - {"--help"}
        known = set(table["cli"][key]["options"])
        lines += [f"+ cli.{key} {f}: installed, not in the table" for f in sorted(flags - known)]
        lines += [f"- cli.{key} {f}: in the table, not installed" for f in sorted(known - flags)]
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the differences as a JSON list")
    parser.add_argument("--cli", action="store_true", help="also compare the command-line tools' --help")
    args = parser.parse_args()
    from specdeploy.engines.trtllm.tables import table_for
    from specdeploy.engines.trtllm.versions import version_line

    try:
        with contextlib.redirect_stdout(sys.stderr):  # its import prints a banner; --json keeps stdout JSON
            import tensorrt_llm
            from tensorrt_llm.llmapi import llm_args
    except ImportError as exc:
        print(f"TensorRT-LLM is not importable here: {exc}", file=sys.stderr)
        return 2
    version = str(tensorrt_llm.__version__)
    try:
        line = version_line(version)
    except ValueError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    table = table_for(line)
    lines = diff(introspect(llm_args), table) + (cli_diff(table) if args.cli else [])
    print(
        json.dumps(lines, indent=1)
        if args.json
        else "\n".join(
            [
                f"TensorRT-LLM {version}: contract range {line.range} (table {line.table}); {len(lines)} differences",
                *lines,
            ]
        )
    )
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
