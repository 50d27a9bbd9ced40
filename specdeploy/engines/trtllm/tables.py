"""Contract tables: the option/field names, types and allowed values of each TRT-LLM release range
(tables/*.json, every entry with its `source`), and checks of an emitted options dict or argv against them.

`table_for(line)` filters a line's table to one range (entries carry `since` / `until` releases, and a
`defaults` map where a default changed between releases) and adds that range's cross-field rules;
`check_llm_api_options(options, table_for(version_line(v)))` is what a double of `TorchLlmArgs` and specdeploy's own
tests both call.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

from specdeploy.engines.trtllm.contract_rules import rule_problems
from specdeploy.engines.trtllm.versions import VersionLine, version_key

TABLES = Path(__file__).parent / "tables"


@cache
def load_table(name: str) -> dict[str, Any]:
    """`trtllm-1.2.1` / `trtllm-1.3` (a VersionLine's `table`), unfiltered."""
    return json.loads((TABLES / f"{name}.json").read_text())  # type: ignore[no-any-return]


def _applies(entry: Any, line: VersionLine) -> bool:
    if not isinstance(entry, dict):
        return True
    since, until = entry.get("since"), entry.get("until")
    if since is not None and version_key(line.low) < version_key(since):
        return False
    return until is None or (line.high is not None and version_key(line.high) <= version_key(until))


def _default_in(defaults: dict[str, Any], line: VersionLine) -> Any:
    """The default in force over all of `line`'s range from a `defaults` map (first release -> value; None:
    unknown from there), or None where the range straddles a change or starts before the first key."""
    starts = sorted(defaults, key=version_key)
    before = [s for s in starts if version_key(s) <= version_key(line.low)]
    after = [s for s in starts if version_key(s) > version_key(line.low)]
    if not before or (after and (line.high is None or version_key(after[0]) < version_key(line.high))):
        return None
    return defaults[before[-1]]


def _filter(node: Any, line: VersionLine) -> Any:
    if not isinstance(node, dict):
        return node
    out = {k: _filter(v, line) for k, v in node.items() if _applies(v, line)}
    if isinstance(out.get("defaults"), dict):  # a default that changed between releases: the range's own
        out.pop("default", None)
        if (value := _default_in(out.pop("defaults"), line)) is not None:
            out["default"] = value
    return out


def table_for(line: VersionLine) -> dict[str, Any]:
    """The line's table restricted to `line`'s range, with the range's rules under `rules`."""
    table = _filter(copy.deepcopy(load_table(line.table)), line)
    table["range"] = line.range
    table["rules"] = {
        "schedule": line.schedule,
        "schedule_key_one_required": line.schedule_key_one_required,
        "schedule_excludes_max_concurrency": line.schedule_excludes_max_concurrency,
        "mtp_overwrites_max_draft_len": "num_nextn_predict_layers" in line.mtp_length_keys,
        "eagle3_two_model": line.eagle3_two_model,
        "dynamic_tree_needs_topk": line.tree_needs_topk,
        "sources": dict(line.sources),
        "unknown": list(line.unknown),
    }
    return table


def _type_ok(value: Any, kind: str) -> bool:
    checks = {
        "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        "bool": lambda v: isinstance(v, bool),
        "str": lambda v: isinstance(v, str),
        "path": lambda v: isinstance(v, str),
        "object": lambda v: isinstance(v, dict),
        "object|null": lambda v: v is None or isinstance(v, dict),
        "list[int]": lambda v: isinstance(v, list) and all(_type_ok(i, "int") for i in v),
        "set[int]": lambda v: isinstance(v, list) and all(_type_ok(i, "int") for i in v),
        "list[list[int]]": lambda v: isinstance(v, list) and all(_type_ok(i, "list[int]") for i in v),
        "dict[int,int]": lambda v: (
            isinstance(v, dict) and all(_type_ok(k, "int") and _type_ok(i, "int") for k, i in v.items())
        ),
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


def decoding_entry(table: dict[str, Any], decoding_type: Any) -> dict[str, Any] | None:
    """The table's decoding class for a `decoding_type` literal (or one of its aliases)."""
    found = table["decoding"].get(decoding_type)
    return found or next((d for d in table["decoding"].values() if decoding_type in d.get("aliases", ())), None)


def check_llm_api_options(options: dict[str, Any], table: dict[str, Any]) -> list[str]:
    """Every key of an `extra_llm_api_options` dict against one range's table (from `table_for`): names,
    types, choices, the decoding literal, required fields, and the range's cross-field validators."""
    problems = _check_fields(options, table["llm_args"], "")
    for name, fields in table["nested"].items():
        if isinstance(options.get(name), dict):
            problems += _check_fields(options[name], fields, name)
    spec = options.get("speculative_config")
    if not isinstance(spec, dict):
        return problems
    dtype = spec.get("decoding_type")
    decoding = decoding_entry(table, dtype)
    if decoding is None:
        return [
            *problems,
            f"speculative_config.decoding_type: unknown '{dtype}' for TRT-LLM "
            f"{table.get('range', table['trtllm_version'])} (known: {', '.join(table['decoding'])})",
        ]
    problems += _check_fields(spec, {**table["decoding_base"], **decoding["fields"]}, "speculative_config")
    problems += [
        f"speculative_config.{k}: not valid for TRT-LLM {table['trtllm_version']}"
        for k in spec
        if k in table.get("forbidden_fields", ())
    ]
    present = {**spec, **({"speculative_model": True} if "speculative_model_dir" in spec else {})}
    problems += [
        f"speculative_config.{k}: required for decoding_type {dtype}"
        for k in decoding.get("required", ())
        if present.get(k) is None
    ]
    return problems + rule_problems(spec, table.get("rules", {}))


def command_key(argv: list[str]) -> tuple[str, int]:
    """(table key, index of the first option) for an emitted argv."""
    if argv[0] in ("trtllm-serve", "trtllm-build", "trtllm-bench"):
        return argv[0], 1
    return argv[1].replace("${trtllm_examples}", "examples"), 2


def check_argv(argv: list[str], table: dict[str, Any]) -> list[str]:
    """Every flag of an emitted command against the range's CLI table: the flag exists, its value has the
    type and is among the choices, and required flags and positionals are present."""
    key, i = command_key(argv)
    cli = table["cli"]
    if key not in cli:
        return [f"{key}: no such command in TRT-LLM {table['trtllm_version']}"]
    spec, problems, positionals = cli[key], [], 0
    seen: set[str] = set()
    while i < len(argv):
        arg = argv[i]
        if not arg.startswith("--"):
            if arg in spec.get("subcommands", ()):
                problems += _missing(key, spec, seen, positionals)
                key, spec, seen, positionals = f"{key} {arg}", cli.get(f"{key} {arg}", {"options": {}}), set(), 0
            elif positionals < len(spec.get("positional", ())):
                positionals += 1
            else:
                problems.append(f"{key}: unexpected argument {arg!r}")
            i += 1
            continue
        option = spec["options"].get(arg)
        seen.add(arg)
        if option is None:  # its value, if any, goes with it
            problems.append(f"{key}: unknown option {arg}")
            i += 2 if i + 1 < len(argv) and not argv[i + 1].startswith("--") else 1
            continue
        if option["type"] == "flag":
            i += 1
            continue
        if i + 1 >= len(argv):
            problems.append(f"{key}: {arg} needs a value")
            break
        problems += _check_value(f"{key}: {arg}", argv[i + 1], option)
        i += 2
    return problems + _missing(key, spec, seen, positionals)


def _missing(key: str, spec: dict[str, Any], seen: set[str], positionals: int) -> list[str]:
    out = [
        f"{key}: required option {name} missing"
        for name, o in spec["options"].items()
        if o.get("required") and name not in seen
    ]
    if positionals < spec.get("required_positional", 0):
        out.append(f"{key}: missing positional argument {spec['positional'][positionals]!r}")
    return out


def _check_value(where: str, value: str, option: dict[str, Any]) -> list[str]:
    if "$" not in value and option["type"] in ("int", "float"):
        try:
            (int if option["type"] == "int" else float)(value)
        except ValueError:
            return [f"{where} {value!r} is not {option['type']}"]
    if "choices" in option and value not in option["choices"]:
        return [f"{where} {value!r} not in {option['choices']}"]
    return []
