"""Contract tables: the option/field names, types and allowed values of each TRT-LLM version (tables/*.json),
and checks of an emitted options dict or argv against them (an unknown or misspelled name is a problem)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from specdeploy.trtllm.versions import VersionLine

TABLES = Path(__file__).parent / "tables"


@cache
def load_table(name: str) -> dict[str, Any]:
    """`trtllm-1.2.1` / `trtllm-1.3` (a VersionLine's `table`)."""
    return json.loads((TABLES / f"{name}.json").read_text())  # type: ignore[no-any-return]


def table_for(line: VersionLine) -> dict[str, Any]:
    return load_table(line.table)


def _type_ok(value: Any, kind: str) -> bool:
    checks = {
        "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        "bool": lambda v: isinstance(v, bool),
        "str": lambda v: isinstance(v, str), "path": lambda v: isinstance(v, str),
        "object": lambda v: isinstance(v, dict), "object|null": lambda v: v is None or isinstance(v, dict),
        "list[int]": lambda v: isinstance(v, list) and all(_type_ok(i, "int") for i in v),
        "set[int]": lambda v: isinstance(v, list) and all(_type_ok(i, "int") for i in v),
        "list[list[int]]": lambda v: isinstance(v, list) and all(_type_ok(i, "list[int]") for i in v),
        "dict[int,int]": lambda v: isinstance(v, dict) and all(_type_ok(k, "int") and _type_ok(i, "int")
                                                               for k, i in v.items()),
    }
    return checks.get(kind, lambda _: False)(value)


def _check_fields(values: dict[str, Any], fields: dict[str, Any], where: str) -> list[str]:
    problems = []
    for key, value in values.items():
        spec = fields.get(key)
        if spec is None:
            problems.append(f"{where}.{key}: unknown field")
        elif not _type_ok(value, spec["type"]):
            problems.append(f"{where}.{key}: {value!r} is not {spec['type']}")
        elif "choices" in spec and value not in spec["choices"]:
            problems.append(f"{where}.{key}: {value!r} not in {spec['choices']}")
    return problems


def check_llm_api_options(options: dict[str, Any], table: dict[str, Any]) -> list[str]:
    """Every key of an `extra_llm_api_options` dict against the version's TorchLlmArgs/decoding tables."""
    problems = _check_fields(options, table["llm_args"], "")
    for name, fields in table["nested"].items():
        if isinstance(options.get(name), dict):
            problems += _check_fields(options[name], fields, name)
    spec = options.get("speculative_config")
    if isinstance(spec, dict):
        dtype = spec.get("decoding_type")
        decoding = table["decoding"].get(dtype) or next(
            (d for d in table["decoding"].values() if dtype in d.get("aliases", ())), None)
        if decoding is None:
            return [*problems, f"speculative_config.decoding_type: unknown '{dtype}' "
                               f"(known: {', '.join(table['decoding'])})"]
        fields = {**table["decoding_base"], **decoding["fields"]}
        problems += _check_fields(spec, fields, "speculative_config")
        problems += [f"speculative_config.{k}: not valid for TRT-LLM {table['trtllm_version']}"
                     for k in spec if k in table.get("forbidden_fields", ())]
    return problems


def command_key(argv: list[str]) -> tuple[str, int]:
    """(table key, index of the first option) for an emitted argv."""
    if argv[0] in ("trtllm-serve", "trtllm-build"):
        return argv[0], 1
    if argv[0] == "trtllm-bench":
        return argv[0], 1
    script = argv[1].replace("${trtllm_examples}", "examples")
    return script, 2


def check_argv(argv: list[str], table: dict[str, Any]) -> list[str]:
    """Every flag (and value type/choice) of an emitted command against the version's CLI table."""
    key, i = command_key(argv)
    cli = table["cli"]
    if key not in cli:
        return [f"{key}: no such command in TRT-LLM {table['trtllm_version']}"]
    spec, problems, positional = cli[key], [], list(cli[key].get("positional", ()))
    while i < len(argv):
        arg = argv[i]
        if not arg.startswith("--"):
            if arg in spec.get("subcommands", ()):
                key = f"{key} {arg}"
                spec = cli.get(key, {"options": {}})
            elif positional:
                positional.pop(0)
            else:
                problems.append(f"{key}: unexpected argument {arg!r}")
            i += 1
            continue
        option = spec["options"].get(arg)
        if option is None:
            problems.append(f"{key}: unknown option {arg}")
            i += 1
            continue
        if option["type"] == "flag":
            i += 1
            continue
        if i + 1 >= len(argv):
            problems.append(f"{key}: {arg} needs a value")
            break
        problems += _check_value(f"{key}: {arg}", argv[i + 1], option)
        i += 2
    return problems


def _check_value(where: str, value: str, option: dict[str, Any]) -> list[str]:
    if option["type"] in ("int", "float"):
        try:
            (int if option["type"] == "int" else float)(value)
        except ValueError:
            return [f"{where} {value!r} is not {option['type']}"]
    if "choices" in option and value not in option["choices"]:
        return [f"{where} {value!r} not in {option['choices']}"]
    return []
