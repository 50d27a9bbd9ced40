"""Per-release contracts (issue #15): the range a trtllm_version selects, each range's rules as checked on
emitted options (tables.check_llm_api_options) and refused at validate, and provenance on every entry."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from specdeploy.engines.trtllm.declare import decoding_of
from specdeploy.engines.trtllm.llm_api import llm_api_options
from specdeploy.engines.trtllm.tables import TABLES, check_llm_api_options, table_for
from specdeploy.engines.trtllm.versions import version_line
from specdeploy.issues import ProfileError
from tests.unit.trtllm.cases import EAGLE3, LLAMA, PYTORCH, SCHEDULE, _case, _mtp


def _table(version: str) -> dict[str, Any]:
    return table_for(version_line(version))


def _emit(resolved: Any) -> dict[str, Any]:
    spec = resolved.profile.speculative
    return llm_api_options(
        resolved, draft_len=resolved.draft_len, schedule=spec.schedule, max_concurrency=spec.max_concurrency
    )


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("1.2.1", "1.2.x"),
        ("1.3.0rc0", "1.3.0rc0-rc1"),
        ("1.3.0rc1", "1.3.0rc0-rc1"),
        ("1.3.0rc2", "1.3.0rc2"),
        ("1.3.0rc2.post1", "1.3.0rc2"),
        ("1.3.0rc3", "1.3.0rc3-rc7"),
        ("1.3.0rc7", "1.3.0rc3-rc7"),
        ("1.3.0rc8", "1.3.0rc8-rc10"),
        ("1.3.0rc10", "1.3.0rc8-rc10"),
        ("1.3.0rc11", "1.3.0rc11-rc13"),
        ("1.3.0rc13", "1.3.0rc11-rc13"),
        ("1.3.0rc14", "1.3.0rc14-rc22"),
        ("1.3.0rc22.post1", "1.3.0rc14-rc22"),
        ("1.3.0rc23", "1.3.0rc23-rc26"),
        ("1.3.0rc27", "1.3.0rc27+"),
        ("1.3.0", "1.3.0rc27+"),
        ("1.3.2", "1.3.0rc27+"),
    ],
)
def test_trtllm_version_selects_its_range(version: str, expected: str) -> None:
    assert version_line(version).range == expected


def test_1_4_is_marked_unknown_and_older_lines_refused() -> None:
    assert version_line("1.4.0rc1").range == "1.4 (UNKNOWN)"
    assert version_line("1.4.3").range == "1.4 (UNKNOWN)"
    for other in ("1.1.0", "1.5.0rc0", "2.0.0", "9.9.0"):  # 9.9.0 was "range 1.4 (UNKNOWN)"
        with pytest.raises(ValueError):
            version_line(other)


def _entries(node: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    """Every field / option / decoding class / command of a table (the dicts that describe one name)."""
    found = []
    if isinstance(node, dict):
        if "type" in node or "fields" in node or "options" in node:
            found.append((path, node))
        for key, value in node.items():
            if key not in ("sources", "rules"):
                found += _entries(value, f"{path}.{key}")
    return found


@pytest.mark.parametrize("name", ["trtllm-1.2.1", "trtllm-1.3"])
def test_every_table_entry_names_its_source(name: str) -> None:
    entries = _entries(json.loads((TABLES / f"{name}.json").read_text()))
    missing = [path for path, entry in entries if not entry.get("source")]
    assert entries and missing == []
    assert not [p for p, e in entries if "unconfirmed" in e]  # UNKNOWN is said in `source`, not a flag


def test_1_3_schedule_and_max_concurrency_are_mutually_exclusive(resolve_case: Any) -> None:
    both = {
        "decoding_type": "Eagle3",
        "max_draft_len": 4,
        "speculative_model": "d",
        "draft_len_schedule": {8: 4},
        "max_concurrency": 8,
    }
    problems = check_llm_api_options({"speculative_config": both}, _table("1.3.0"))
    assert problems == ["speculative_config: max_concurrency and draft_len_schedule are mutually exclusive"]
    both_12 = {**both, "decoding_type": "Eagle", "draft_len_schedule": {1: 4, 8: 0}}
    assert check_llm_api_options({"speculative_config": both_12}, _table("1.2.1")) == []  # 1.2.1: no such rule
    options = _emit(resolve_case("s", PYTORCH["pytorch-1.3.0-eagle3-schedule"]))
    assert "max_concurrency" not in options["speculative_config"]
    assert options["speculative_config"]["draft_len_schedule"] == {3: 4, 15: 3, 24: 2}  # closed at 24
    assert check_llm_api_options(options, _table("1.3.0")) == []


def test_1_3_smallest_key_carries_max_draft_len(resolve_case: Any) -> None:
    spec = {
        "decoding_type": "Eagle3",
        "max_draft_len": 4,
        "speculative_model": "d",
        "draft_len_schedule": {7: 2, 16: 4},
    }
    assert check_llm_api_options({"speculative_config": spec}, _table("1.3.0"))[0].startswith(
        "speculative_config.draft_len_schedule[7] must equal max_draft_len 4"
    )
    data = _case(LLAMA, "pytorch", "1.3.0", "eagle3", draft_len=4, draft_model=EAGLE3, schedule={1: 2, 8: 4})
    with pytest.raises(ProfileError) as err:
        resolve_case("k", data)
    assert err.value.issues[0].path == ("speculative", "schedule")
    assert "smallest batch key" in err.value.issues[0].message


def test_eagle3_two_model_by_range(resolve_case: Any) -> None:
    with pytest.raises(ProfileError) as err:
        resolve_case(
            "r",
            {
                **PYTORCH["pytorch-1.2.1-eagle3-two-model-schedule"],
                "runtime": {"trtllm_version": "1.3.0", "backend": "pytorch"},
            },
        )
    assert err.value.issues[0].path == ("speculative", "options", "one_model")
    deprecated = resolve_case("d", PYTORCH["pytorch-1.3.0rc23-eagle3-two-model-schedule"])
    assert any("deprecated" in n.message for n in deprecated.notes)
    options = _emit(deprecated)
    assert options["disable_overlap_scheduler"] is True and options["speculative_config"]["eagle3_one_model"] is False
    one_model = _emit(resolve_case("o", PYTORCH["pytorch-1.3.0-eagle3"]))
    assert "disable_overlap_scheduler" not in one_model and "eagle3_one_model" not in one_model["speculative_config"]
    refused = {"decoding_type": "Eagle3", "max_draft_len": 3, "speculative_model": "d", "eagle3_one_model": False}
    assert check_llm_api_options({"speculative_config": refused}, _table("1.3.0rc27"))[0] == (
        "speculative_config.eagle3_one_model: unknown field"
    )


def test_emitting_a_refused_option_is_a_located_profile_error(resolve_case: Any) -> None:
    """The emitter raises a declared refusal as the profile error validate gives (was: a bare ValueError, a
    traceback), here for a profile resolved on rc23 (two-model deprecated) and emitted for rc27+ (refused)."""
    resolved = dataclasses.replace(
        resolve_case("d", PYTORCH["pytorch-1.3.0rc23-eagle3-two-model-schedule"]), line=version_line("1.3.0")
    )
    with pytest.raises(ProfileError) as err:
        _emit(resolved)
    (issue,) = err.value.issues
    assert issue.path == ("speculative", "options", "one_model") and "two-model EAGLE-3 is refused" in issue.message


def test_early_1_3_mtp_emits_k_in_both_keys(resolve_case: Any) -> None:
    early = _emit(resolve_case("e", _mtp("1.3.0rc14")))["speculative_config"]
    assert early["num_nextn_predict_layers"] == early["max_draft_len"] == 3
    late = _emit(resolve_case("l", _mtp("1.3.0rc23")))["speculative_config"]
    assert late["max_draft_len"] == 3 and "num_nextn_predict_layers" not in late
    only_k = {"speculative_config": {"decoding_type": "MTP", "max_draft_len": 3}}
    assert "overwritten by num_nextn_predict_layers (1)" in check_llm_api_options(only_k, _table("1.3.0rc14"))[0]
    assert check_llm_api_options(only_k, _table("1.3.0rc23")) == []


def test_decoding_type_spelling_per_release() -> None:
    draft_target = {"max_draft_len": 4, "speculative_model": "d"}
    assert (
        check_llm_api_options({"speculative_config": {"decoding_type": "DraftTarget", **draft_target}}, _table("1.2.1"))
        == []
    )
    assert (
        check_llm_api_options(
            {"speculative_config": {"decoding_type": "Draft_Target", **draft_target}}, _table("1.3.0")
        )
        == []
    )
    assert check_llm_api_options(
        {"speculative_config": {"decoding_type": "DraftTarget", **draft_target}}, _table("1.3.0")
    )
    assert check_llm_api_options(
        {"speculative_config": {"decoding_type": "Eagle3", **draft_target}}, _table("1.2.1")
    )  # 1.2.1's from_dict map has no Eagle3
    assert decoding_of("draft_target").decoding_type["1.3"] == "Draft_Target"  # the plugin declares it


def test_acceptance_field_names_per_range() -> None:
    old, new = (
        ("acceptance_window", "acceptance_length_threshold"),
        ("acceptance_rate_window_size", "acceptance_rate_threshold"),
    )
    for version, present, absent in (
        ("1.2.1", old, new),
        ("1.3.0rc14", old, new),
        ("1.3.0rc23", new, old),
        ("1.3.0", new, old),
    ):
        base = _table(version)["decoding_base"]
        assert all(k in base for k in present) and not any(k in base for k in absent), version
        assert version_line(version).acceptance_fields == present


def test_unknown_schedule_semantics_refused_at_validate(resolve_case: Any) -> None:
    data = _case(LLAMA, "pytorch", "1.3.0rc5", "ngram", draft_len=4, schedule=SCHEDULE)
    with pytest.raises(ProfileError) as err:
        resolve_case("u", data)
    assert "UNKNOWN" in err.value.issues[0].message and err.value.issues[0].path == ("speculative", "schedule")


def test_mechanisms_lists_the_ranges_with_their_unknowns() -> None:
    from specdeploy.api import mechanisms

    rows = {r.name: r for r in mechanisms()}
    eagle3 = {r["range"]: r for r in rows["eagle3"].trtllm_ranges["pytorch"]}
    assert eagle3["1.3.0rc27+"]["notes"] == ["two-model refused"] and eagle3["1.2.x"]["decoding_type"] == "Eagle"
    assert eagle3["1.4 (UNKNOWN)"]["unknown"] == ["1.4.contract"]
    assert eagle3["1.3.0rc3-rc7"]["notes"] == [
        "draft_len_schedule UNKNOWN: a profile's refused, a tuned one emitted as one K"
    ]
    assert [r["range"] for r in rows["medusa"].trtllm_ranges["tensorrt"]] == ["1.2.x"]
    assert not {"1.3.0rc8-rc10", "1.3.0rc11-rc13"} & {r["range"] for r in rows["dflash"].trtllm_ranges["pytorch"]}
    assert eagle3["1.3.0rc8-rc10"]["notes"] == eagle3["1.3.0rc11-rc13"]["notes"] == ["two-model deprecated"]


def test_a_mechanism_absent_from_the_range_is_refused_at_validate(resolve_case: Any) -> None:
    data = {**PYTORCH["pytorch-1.3.0-sa"], "runtime": {"trtllm_version": "1.3.0rc5", "backend": "pytorch"}}
    with pytest.raises(ProfileError) as err:
        resolve_case("sa", data)
    assert err.value.issues[0].path == ("speculative", "mechanism") and "1.3.0rc3-rc7" in err.value.message


def test_a_tuned_schedule_on_a_range_of_unknown_semantics_emits_one_k(resolve_case: Any, tmp_path: Any) -> None:
    """1.3.0rc3-rc7: validate accepts draft_len: auto, tune says "no draft_len_schedule emitted"; emit must
    agree (it raised ValueError, a failed build after the tune) and verify must accept what was emitted."""
    import yaml

    from specdeploy.execute.verify import lock_problems
    from specdeploy.tune.book import Decision
    from specdeploy.tune.emit import schedule_of

    resolved = resolve_case("a", _case(LLAMA, "pytorch", "1.3.0rc5", "eagle3", draft_len="auto", draft_model=EAGLE3))
    tuned = schedule_of(
        {c: Decision(c, k, 1.0, 1.0, "") for c, k in {1: 4, 4: 3, 8: 2, 16: 0}.items()},
        max_batch_size=32,
        trtllm_version="1.3.0rc5",
    )
    options = llm_api_options(
        resolved,
        draft_len=tuned["draft_len"],
        schedule=[tuple(r) for r in tuned["ranges"]],
        max_concurrency=tuned["max_concurrency"],
    )
    spec = options["speculative_config"]
    assert "draft_len_schedule" not in spec and spec["max_draft_len"] == 4 and spec["max_concurrency"] == 15
    assert check_llm_api_options(options, _table("1.3.0rc5")) == []
    (tmp_path / "llm_api_options.yaml").write_text(yaml.safe_dump(options))
    (tmp_path / "specdeploy.lock").write_text(
        json.dumps({"profile": "a", "profile_hash": "h", "models": {}, "tuned": {"emitted": tuned["emitted"]}})
    )
    manifest = {"profile": {"name": "a", "hash": "h"}, "models": {}}
    assert lock_problems(tmp_path, manifest) == []


def test_a_release_no_contract_was_read_for_is_a_warning(resolve_case: Any) -> None:
    """1.4 pins validate with the 1.3.0rc27+ rules assumed: said at runtime.trtllm_version, never silently."""
    resolved = resolve_case("f", _case(LLAMA, "pytorch", "1.4.0rc1", "eagle3", draft_len=3, draft_model=EAGLE3))
    (note,) = [n for n in resolved.notes if n.path == ("runtime", "trtllm_version")]
    assert note.severity == "warning" and "UNKNOWN" in note.message and "1.3.0rc27+" in note.message
    known = resolve_case("k", _case(LLAMA, "pytorch", "1.3.0", "eagle3", draft_len=3, draft_model=EAGLE3))
    assert not [n for n in known.notes if n.path == ("runtime", "trtllm_version")]
