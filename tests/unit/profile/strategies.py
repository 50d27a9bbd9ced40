"""Hypothesis strategies over profiles, shared by the fuzz test and the fast-path differential test."""

from __future__ import annotations

from typing import Any

import yaml
from hypothesis import strategies as st

from specdeploy.profile.shipped import shipped_profiles

SHIPPED = {name: yaml.safe_load(path.read_text()) for name, path in shipped_profiles().items()}

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True),
    st.text(max_size=30),
    st.sampled_from(["on", "no", "2e-5", "0755", "1:30"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=6,
)


def mutate(data: dict, path: list[str], value: object, delete: bool) -> dict:
    node = data
    for key in path[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            return data
        node = child
    if delete:
        node.pop(path[-1], None)
    else:
        node[path[-1]] = value
    return data


def key_paths(data: dict, prefix: tuple = ()) -> list[list[str]]:
    out = []
    for key, value in data.items():
        out.append([*prefix, key])
        if isinstance(value, dict):
            out.extend(key_paths(value, (*prefix, key)))
    return out


def from_table(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values shaped by a fast-path table: mostly valid, with the bounds and their neighbours."""
    if "anyOf" in schema:
        return st.one_of([from_table(branch) for branch in schema["anyOf"]])
    if "const" in schema or "enum" in schema:
        return st.sampled_from(schema.get("enum", [schema.get("const")]))
    kind = schema.get("type")
    if kind == "integer":
        low = schema.get("minimum", schema.get("exclusiveMinimum", -3))
        high = schema.get("maximum", schema.get("exclusiveMaximum", 70))
        return st.one_of(st.integers(int(low) - 1, int(min(high, 10**6)) + 1), st.sampled_from([low, high]))
    if kind == "number":
        low = schema.get("minimum", schema.get("exclusiveMinimum", -2.0))
        high = schema.get("maximum", schema.get("exclusiveMaximum", 500.0))
        return st.one_of(st.floats(low - 1, high + 1), st.integers(int(low) - 1, int(high) + 1), st.just(low))
    if kind == "string":
        return st.one_of(st.sampled_from(["1.2.1", "1.3.0rc2", "1.1.0", "m", "auto", "none"]), st.text(max_size=5))
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        return st.lists(from_table(schema["items"]), max_size=4)
    return _objects(schema) if kind == "object" else values


def _objects(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    if "properties" in schema:
        props = schema["properties"]
        required = {k: from_table(props[k]) for k in schema["required"]}
        optional = {k: from_table(v) for k, v in props.items() if k not in required}
        return st.fixed_dictionaries(required, optional=optional)
    keys = st.integers(-1, 70) if schema.get("keys") == "integer" else st.text(max_size=5)
    items = values if schema["additionalProperties"] is True else from_table(schema["additionalProperties"])
    return st.dictionaries(keys, items, max_size=4)
