"""Fuzzed profile trees (a child `extends` a parent, each mutated) and fuzzed `--set` paths and values, through
`validate` and `plan`: the CLI exits 0 or 2 with a located message, never 3, never a traceback."""

from __future__ import annotations

from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import cli
from tests.unit.profile.strategies import SHIPPED, key_paths, mutate, values

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
set_values = st.one_of(
    st.text(max_size=12),
    st.sampled_from(
        ["1", "-1", "0", "1e400", "inf", "nan", "[1, 2]", "{a: 1}", "&a [*a]", "true", "null", "'x", "\x00"]
    ),
)


def _clean(code: int, err: str) -> None:
    assert code in (0, 2), err
    assert "Traceback" not in err and "internal error" not in err, err


@SETTINGS
@given(
    name=st.sampled_from(sorted(SHIPPED)),
    data=st.data(),
    value=values,
    delete=st.booleans(),
    command=st.sampled_from(["validate", "plan"]),
)
def test_mutated_trees_never_traceback(
    tmp_path: Path, name: str, data: st.DataObject, value: object, delete: bool, command: str
) -> None:
    parent = yaml.safe_load(yaml.safe_dump(SHIPPED[name]))
    child = {"extends": "parent.yaml", **{k: v for k, v in parent.items() if k in ("serving", "tune")}}
    which = data.draw(st.sampled_from(["parent", "child"]))
    tree = parent if which == "parent" else child
    path = data.draw(st.sampled_from(key_paths(tree) or [["serving"]]))
    mutate(tree, path, value, delete)
    (tmp_path / "parent.yaml").write_text(yaml.safe_dump(parent, allow_unicode=True))
    (tmp_path / "child.yaml").write_text(yaml.safe_dump(child, allow_unicode=True))
    code, _, err = cli(command, str(tmp_path / "child.yaml"))
    _clean(code, err)


@SETTINGS
@given(
    name=st.sampled_from(sorted(SHIPPED)),
    data=st.data(),
    value=set_values,
    extra=st.text(min_size=0, max_size=10),
    command=st.sampled_from(["validate", "plan"]),
)
def test_fuzzed_set_paths_never_traceback(name: str, data: st.DataObject, value: str, extra: str, command: str) -> None:
    paths = [".".join(map(str, p)) for p in key_paths(SHIPPED[name])]
    key = data.draw(st.sampled_from([*paths, extra, f"serving.{extra}", f"{extra}.x", "..", "a..b", ".x"]))
    code, _, err = cli(command, name, "--set", f"{key}={value}")
    _clean(code, err)


config_values = st.one_of(
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=True),
    st.booleans(),
    st.none(),
    st.text(max_size=4),
    st.lists(st.integers(0, 9), max_size=2),
)
SIZES = [
    "hidden_size",
    "num_attention_heads",
    "num_hidden_layers",
    "num_key_value_heads",
    "intermediate_size",
    "vocab_size",
    "max_position_embeddings",
    "head_dim",
    "kv_lora_rank",
    "num_local_experts",
    "sliding_window",
]


@SETTINGS
@given(
    changes=st.dictionaries(st.sampled_from(SIZES), config_values, min_size=1, max_size=3),
    command=st.sampled_from(["validate", "plan"]),
)
def test_fuzzed_config_json_never_tracebacks(tmp_path: Path, changes: dict[str, object], command: str) -> None:
    """`hidden_size: Infinity` in a config.json was an OverflowError in `plan` (exit 3)."""
    import json

    from tests.helpers import LLAMA_31_8B_CONFIG, cli, local_model

    model = local_model(tmp_path / "m", {**LLAMA_31_8B_CONFIG, **changes})
    (model / "config.json").write_text(json.dumps({**LLAMA_31_8B_CONFIG, **changes}))  # Infinity, NaN as JSON has them
    profile = tmp_path / "p.yaml"
    profile.write_text(
        yaml.safe_dump(
            {
                "target": {"model": str(model)},
                "hardware": {"gpu": "h200"},
                "speculative": {"mechanism": "ngram", "draft_len": 3},
            }
        )
    )
    code, _, err = cli(command, str(profile))
    _clean(code, err)
