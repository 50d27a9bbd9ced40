"""The fast path decides exactly what the pydantic models decide, or leaves the profile to them."""

from __future__ import annotations

import copy
import json
import pickle
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from specdeploy.api import load_and_resolve
from specdeploy.fast_tables import PROFILE_TABLES, load_tables
from specdeploy.issues import ProfileError
from specdeploy.plan.planner import make_plan
from specdeploy.plan.text import plan_text
from specdeploy.plugin import Mechanism
from specdeploy.plugin.registry import get_mechanism, mechanism_names
from specdeploy.profile.fast import fast_profile
from specdeploy.profile.loader import load_profile
from specdeploy.profile.record import Record
from specdeploy.profile.schema import Profile
from specdeploy.profile.shipped import shipped_profiles
from tests.unit.profile.strategies import SHIPPED, from_table, key_paths, mutate, values

TABLE = load_tables(str(PROFILE_TABLES))["Profile"]
DUMPS = ({"mode": "json"}, {"mode": "json", "exclude_none": True}, {})


def mechanism_of(data: dict[str, Any]) -> Mechanism | None:
    spec = data.get("speculative")
    name = spec.get("mechanism") if isinstance(spec, dict) else None
    return get_mechanism(name) if isinstance(name, str) and name in mechanism_names() else None


def same_dumps(fast: Any, model: Any) -> None:
    for kwargs in DUMPS:  # compared as JSON text so that 1 and 1.0 differ
        assert json.dumps(fast.model_dump(**kwargs), default=repr) == json.dumps(model.model_dump(**kwargs),
                                                                                  default=repr)


def decided_equal(data: dict[str, Any]) -> bool:
    """Whether the fast path decided `data`; when it did, pydantic accepts it and holds the same values."""
    mechanism = mechanism_of(data)
    decided = fast_profile(data, mechanism)
    if decided is None:
        return False
    profile = Profile.model_validate(data)  # a ValidationError here: the fast path accepted an invalid profile
    same_dumps(decided[0], profile)
    if mechanism is not None:
        same_dumps(decided[1], mechanism.parse_options(profile.speculative.options))
    return True


@pytest.mark.parametrize("name", sorted(shipped_profiles()))
def test_every_shipped_profile_is_decided_as_pydantic_decides(name: str) -> None:
    fast, slow = load_profile(name), load_profile(name, fast=False)
    assert isinstance(fast.profile, Record) and not isinstance(slow.profile, Record)
    same_dumps(fast.profile, slow.profile)
    if slow.options is not None:
        assert isinstance(fast.options, Record)
        same_dumps(fast.options, slow.options)
    assert decided_equal(SHIPPED[name])


@pytest.mark.parametrize("name", sorted(shipped_profiles()))
def test_plan_is_the_same_on_both_paths(name: str) -> None:
    fast, slow = load_and_resolve(name), load_and_resolve(name, fast=False)
    assert isinstance(fast.profile, Record)
    fast_plan, slow_plan = make_plan(fast), make_plan(slow)
    assert plan_text(fast, fast_plan) == plan_text(slow, slow_plan)
    assert fast_plan.to_dict() == slow_plan.to_dict() and fast.notes == slow.notes


def schema_at(path: list[str], mechanism: Mechanism | None) -> dict[str, Any] | None:
    schema: dict[str, Any] | None = TABLE
    for key in path:
        if path[:2] == ["speculative", "options"] and key == "options" and mechanism is not None:
            schema = type(mechanism).options_table()
            continue
        objects = [s for s in (schema or {}, *(schema or {}).get("anyOf", ())) if "properties" in s]
        schema = objects[0]["properties"].get(key) if objects else None
    return schema


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(sorted(SHIPPED)), data=st.data(), delete=st.booleans())
def test_mutated_shipped_profiles_agree(tmp_path: Path, name: str, data: st.DataObject, delete: bool) -> None:
    profile = yaml.safe_load(yaml.safe_dump(SHIPPED[name]))
    path = data.draw(st.sampled_from(key_paths(profile) + [["serving", "max_input_len"], ["tune", "sla"]]))
    schema = schema_at(path, mechanism_of(profile))
    value = data.draw(st.one_of(values, from_table(schema)) if schema else values)
    mutated = mutate(profile, path, value, delete)
    event("decided" if decided_equal(mutated) else "undecided")
    file = tmp_path / "m.yaml"  # and end to end through YAML: the same outcome, the same errors
    file.write_text(yaml.safe_dump(mutated, allow_unicode=True))
    outcomes = []
    for fast in (True, False):
        try:
            loaded = load_profile(str(file), fast=fast)
        except ProfileError as exc:
            outcomes.append(exc.issues)
        else:
            outcomes.append(json.dumps([loaded.profile.model_dump(mode="json"),
                                        loaded.options.model_dump(mode="json") if loaded.options else None]))
    assert outcomes[0] == outcomes[1]


@settings(max_examples=150, deadline=None)
@given(data=st.data(), name=st.sampled_from(mechanism_names()))
def test_profiles_drawn_from_the_tables_agree(data: st.DataObject, name: str) -> None:
    profile = data.draw(from_table(TABLE))
    options = data.draw(from_table(type(get_mechanism(name)).options_table() or {}))
    profile["speculative"] = {**profile.get("speculative", {}), "mechanism": name, "options": options}
    event("decided" if decided_equal(profile) else "undecided")


VALID_EDITS = [
    ("serving", {"kv_cache_free_gpu_memory_fraction": 1}),  # int -> float, as pydantic does
    ("speculative", {"mechanism": "eagle3", "draft_len": 4, "schedule": {8: 2, 1: 4}, "max_concurrency": 32,
                     "draft_model": "d", "options": {"layers_to_capture": [1, -2], "dynamic_tree_max_topk": 2}}),
    ("tune", {"concurrency": [4, 1, 1], "draft_lens": [3, 2], "sla": {"p99_itl_ms": 50}, "time_budget_s": 9.5}),
    ("tune", {"acceptance_al": {8: 3.1, 4: 2.6}, "acceptance_rates": [0.8, 0.6, 0.6]}),
    ("hardware", {"gpu": "b200", "count": 64, "tensor_parallel": 64}),
    ("runtime", {"trtllm_version": "1.3.0rc2", "backend": "tensorrt"}),
    ("triton", {"decoupled": None, "layout": "engine"}),
    ("description", None),
]


@pytest.mark.parametrize(("key", "value"), VALID_EDITS)
def test_valid_edits_are_decided(key: str, value: Any) -> None:
    assert decided_equal({**SHIPPED["h200-eagle3"], key: value})


UNDECIDED_EDITS = [
    ("serving", {"max_batch_size": "64"}),  # a string in an int slot (pydantic would coerce it)
    ("serving", {"max_batch_size": 64.0}),  # a float in an int slot
    ("serving", {"max_batch_size": True}),  # a YAML boolean in a number slot
    ("serving", {"kv_cache_free_gpu_memory_fraction": "0.5"}),
    ("serving", {"kv_cache_free_gpu_memory_fraction": float("nan")}),
    ("serving", {"max_batch_sise": 8}),  # an unknown key
    ("hardware", {"count": 65}),
    ("target", {"model": True}),
    ("target", {}),  # a required key missing
    ("runtime", {"trtllm_version": "1.1.0"}),  # the known-line check
    ("speculative", {"mechanism": "eagle3", "draft_len": 0, "draft_model": "d"}),  # draft_len >= 1
    ("speculative", {"mechanism": "eagle3", "schedule": {2: 1}, "draft_model": "d"}),  # starts at 1
    ("speculative", {"mechanism": "eagle3", "schedule": {"1": 4}, "draft_model": "d"}),  # a string key
    ("speculative", {"mechanism": "eagle3", "draft_model": "d", "options": {"one_model": "yes"}}),
    ("speculative", {"mechanism": "eagle3", "draft_model": "d", "options": {"bogus": 1}}),
    ("tune", {"concurrency": [0, 1]}),
    ("tune", {"concurrency": [1, True]}),
    ("tune", {"acceptance_rates": [0.5, 0.8]}),  # rates must not rise with the position
    ("tune", {"acceptance_al": {2: 3.5}}),  # AL above K + 1
    (1, {}),  # a non-string top-level key
]


@pytest.mark.parametrize(("key", "value"), UNDECIDED_EDITS)
def test_anything_unusual_is_left_to_pydantic(key: Any, value: Any) -> None:
    data = {**SHIPPED["h200-eagle3"], key: value}
    assert fast_profile(data, mechanism_of(data)) is None


def test_a_plugin_without_a_table_or_with_its_own_parsing_is_left_to_pydantic() -> None:
    from pydantic import BaseModel

    class EchoOptions(BaseModel):
        window: int = 2

    class Echo(Mechanism):
        name = "echo"
        Options = EchoOptions

    class OwnParsing(type(get_mechanism("eagle3"))):  # type: ignore[misc]
        def parse_options(self, raw: dict[str, Any]) -> BaseModel:
            return EchoOptions.model_validate(raw)

    assert Echo.options_table() is None and fast_profile(SHIPPED["h200-eagle3"], Echo()) is None
    assert OwnParsing.options_table() is None and fast_profile(SHIPPED["h200-eagle3"], OwnParsing()) is None
    assert fast_profile(SHIPPED["h200-eagle3"], get_mechanism("eagle3")) is not None


def test_every_command_gets_the_same_decision_and_it_travels() -> None:
    """build, tune and render resolve as validate and plan do (one decision); a Ray task pickles what it gets."""
    resolved = load_and_resolve("h200-eagle3")
    assert isinstance(resolved.profile, Record)
    for copied in (pickle.loads(pickle.dumps(resolved)), copy.deepcopy(resolved)):
        assert copied.profile == resolved.profile and copied.loaded.options == resolved.loaded.options


def test_record_reads_like_the_model_and_is_read_only() -> None:
    record = load_profile("h200-eagle3").profile
    assert isinstance(record, Record)
    assert record.serving.max_batch_size == 64 and record.tune.sla.p99_itl_ms is None
    with pytest.raises(AttributeError):
        record.serving.max_batch_size = 1
    with pytest.raises(AttributeError, match="no field 'max_batch_sise'"):
        _ = record.serving.max_batch_sise
    schedule = Record({"schedule": {1: 4}, "none": None})
    assert schedule.model_dump(mode="json") == {"schedule": {"1": 4}, "none": None}
    assert schedule.model_dump(exclude_none=True) == {"schedule": {1: 4}}
