"""Hypothesis strategies over profiles, shared by the fuzz tests."""

from __future__ import annotations

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
