"""The 1.3 release candidates before rc14, split where their llm_args pages were read (versions.py: P2 = rc2,
P8-P13 = rc8 to rc13, split at rc11 where SA's settings moved to sa_config): rc0-rc2 read keys as lower
bounds, rc8-rc13 as upper bounds, rc3-rc7 (unread, between
the two) refuse a profile's schedule; draft/target is 'DraftTarget' before rc8; SA and PARD come at rc8, DFlash
at rc14."""

from __future__ import annotations

from typing import Any

import pytest

from specdeploy.engines.trtllm.declare import decoding_of
from specdeploy.engines.trtllm.llm_api import llm_api_options
from specdeploy.engines.trtllm.tables import check_llm_api_options, table_for
from specdeploy.engines.trtllm.versions import RANGES, UNCONFIRMED, version_line
from specdeploy.issues import ProfileError
from tests.unit.trtllm.cases import EAGLE3, LLAMA, PYTORCH, SCHEDULE, SMALL, _case, _mtp


def _emit(resolved: Any) -> dict[str, Any]:
    spec = resolved.profile.speculative
    options = llm_api_options(
        resolved, draft_len=resolved.draft_len, schedule=spec.schedule, max_concurrency=spec.max_concurrency
    )
    assert check_llm_api_options(options, table_for(resolved.line)) == []
    return options["speculative_config"]  # type: ignore[no-any-return]


def _ngram(version: str) -> dict[str, Any]:
    return _case(LLAMA, "pytorch", version, "ngram", draft_len=4, schedule=SCHEDULE, max_concurrency=24)


@pytest.mark.parametrize("version", ["1.3.0rc0", "1.3.0rc2"])
def test_rc0_to_rc2_emit_lower_bounds_beside_max_concurrency(resolve_case: Any, version: str) -> None:
    """P2: key 1 required, schedule[1] == max_draft_len, no rule against max_concurrency (as 1.2.1)."""
    spec = _emit(resolve_case("l", _ngram(version)))
    assert spec["draft_len_schedule"] == {1: 4, 4: 3, 16: 2, 25: 0} and spec["max_concurrency"] == 24
    no_key_one = {"decoding_type": "NGram", "max_draft_len": 4, "draft_len_schedule": {4: 4, 8: 0}}
    assert check_llm_api_options({"speculative_config": no_key_one}, table_for(version_line(version))) == [
        "speculative_config.draft_len_schedule: must include batch_size=1"
    ]


@pytest.mark.parametrize("version", ["1.3.0rc8", "1.3.0rc13"])
def test_rc8_to_rc13_emit_upper_bounds_without_max_concurrency(resolve_case: Any, version: str) -> None:
    """P8, P10, P11, P13: the smallest key carries max_draft_len, keys are upper bounds, exclusive with
    max_concurrency (as 1.3.0rc14 on)."""
    spec = _emit(resolve_case("u", _ngram(version)))
    assert spec["draft_len_schedule"] == {3: 4, 15: 3, 24: 2} and "max_concurrency" not in spec


@pytest.mark.parametrize("version", ["1.3.0rc3", "1.3.0rc7"])
def test_the_unread_rc3_to_rc7_refuse_a_schedule(resolve_case: Any, version: str) -> None:
    with pytest.raises(ProfileError) as err:
        resolve_case("g", _ngram(version))
    (issue,) = err.value.issues
    assert issue.path == ("speculative", "schedule") and "UNKNOWN" in issue.message
    assert "1.3.schedule_rc3_rc7" in version_line(version).unknown


def test_only_the_unread_rc0_and_rc1_warn_at_the_version(resolve_case: Any) -> None:
    def said(version: str) -> list[str]:
        resolved = resolve_case("w", _ngram(version))
        return [n.message for n in resolved.notes if n.path == ("runtime", "trtllm_version")]

    (note,) = said("1.3.0rc1")
    assert "UNKNOWN" in note and UNCONFIRMED["1.3.rc0_rc1"] in note
    assert said("1.3.0rc2") == []


@pytest.mark.parametrize(
    ("version", "spelled"),
    [
        ("1.3.0rc0", "DraftTarget"),
        ("1.3.0rc2", "DraftTarget"),
        ("1.3.0rc7", "DraftTarget"),
        ("1.3.0rc8", "Draft_Target"),
    ],
)
def test_draft_target_is_spelled_per_range(resolve_case: Any, version: str, spelled: str) -> None:
    """P2's from_dict map has 'DraftTarget' and no 'Draft_Target' (D6, D7 list 'DraftTarget'); P8 on declare
    Literal['Draft_Target']. The other spelling fails the range's table."""
    data = _case(LLAMA, "pytorch", version, "draft_target", draft_len=4, draft_model=SMALL)
    assert _emit(resolve_case("d", data))["decoding_type"] == spelled
    other = {"DraftTarget": "Draft_Target", "Draft_Target": "DraftTarget"}[spelled]
    wrong = {"decoding_type": other, "max_draft_len": 4, "speculative_model": "d"}
    assert check_llm_api_options({"speculative_config": wrong}, table_for(version_line(version)))


def test_spellings_before_a_release_start_at_a_range_boundary() -> None:
    lows = {line.low for line in RANGES}
    declared = decoding_of("draft_target")
    assert declared is not None and set(declared.spelled_before) <= lows


@pytest.mark.parametrize(
    ("case", "refused", "accepted", "spelled"),
    [
        ("pytorch-1.3.0-sa", "1.3.0rc7", "1.3.0rc8", "SA"),
        ("pytorch-1.3.0-pard", "1.3.0rc7", "1.3.0rc8", "PARD"),
        ("pytorch-1.3.0-dflash", "1.3.0rc13", "1.3.0rc14", "DFlash"),
    ],
)
def test_mechanisms_start_where_their_class_was_first_read(
    resolve_case: Any, case: str, refused: str, accepted: str, spelled: str
) -> None:
    """SA and PARD: absent from P2 and D6, classes in P8; DFlash: absent from P13, class in P14."""

    def at(version: str) -> dict[str, Any]:
        return {**PYTORCH[case], "runtime": {"trtllm_version": version, "backend": "pytorch"}}

    with pytest.raises(ProfileError) as err:
        resolve_case("r", at(refused))
    assert err.value.issues[0].path == ("speculative", "mechanism")
    assert _emit(resolve_case("a", at(accepted)))["decoding_type"] == spelled


def test_two_model_eagle3_warns_from_rc8_and_mtp_k_is_in_both_keys(resolve_case: Any) -> None:
    """P2's validate_eagle_config warns nothing, P8's warns it deprecated; MTP overwrites max_draft_len in both."""

    def warned(version: str) -> bool:
        data = _case(LLAMA, "pytorch", version, "eagle3", draft_len=4, draft_model=EAGLE3, options={"one_model": False})
        return any("deprecated" in n.message for n in resolve_case("t", data).notes)

    assert [warned(v) for v in ("1.3.0rc2", "1.3.0rc5", "1.3.0rc8")] == [False, False, True]
    for version in ("1.3.0rc2", "1.3.0rc8"):
        spec = _emit(resolve_case("m", _mtp(version)))
        assert spec["num_nextn_predict_layers"] == spec["max_draft_len"] == 3
