"""Decoding-class fields bounded to the releases whose llm_args pages show them (tables/trtllm-1.3.json `since` /
`until` / `defaults`, read per release in versions.py's P2-P23): a field a release lacks is refused for it."""

from __future__ import annotations

from typing import Any

import pytest

from specdeploy.engines.trtllm.llm_api import llm_api_options
from specdeploy.engines.trtllm.tables import check_llm_api_options, table_for
from specdeploy.engines.trtllm.versions import version_line
from specdeploy.issues import ProfileError
from tests.unit.trtllm.cases import EAGLE3, LLAMA, _case

SPECS = {
    "MTP": {"max_draft_len": 3, "num_nextn_predict_layers": 3},
    "Eagle3": {"max_draft_len": 3, "speculative_model": "d"},
    "PARD": {"max_draft_len": 3, "speculative_model": "d"},
}
OLD_SA = {"use_sa_spec": True, "sa_spec_threshold": 4}
NEW_SA = {"sa_config": {"threshold": 4}}


def _check(version: str, decoding_type: str, **fields: Any) -> list[str]:
    spec = {"decoding_type": decoding_type, **SPECS.get(decoding_type, {}), **fields}
    return check_llm_api_options({"speculative_config": spec}, table_for(version_line(version)))


@pytest.mark.parametrize("decoding_type", sorted(SPECS))
@pytest.mark.parametrize(
    ("version", "old", "new"),
    [("1.3.0rc8", True, False), ("1.3.0rc10", True, False), ("1.3.0rc11", False, True), ("1.3.0rc23", False, True)],
)
def test_sa_settings_follow_the_release(decoding_type: str, version: str, old: bool, new: bool) -> None:
    """P8, P10: use_sa_spec / sa_spec_threshold on Eagle3, MTP, PARD; P11 on: sa_config (SAEnhancerConfig)."""
    assert (_check(version, decoding_type, **OLD_SA) == []) is old
    assert (_check(version, decoding_type, **NEW_SA) == []) is new
    assert _check(version, decoding_type) == []


def test_a_missing_sa_field_is_refused_by_name() -> None:
    assert _check("1.3.0rc11", "MTP", use_sa_spec=True) == ["speculative_config.use_sa_spec: unknown field"]
    assert _check("1.3.0rc10", "Eagle3", **NEW_SA) == ["speculative_config.sa_config: unknown field"]
    assert _check("1.3.0rc2", "Eagle3", use_sa_spec=True) == ["speculative_config.use_sa_spec: unknown field"]


def test_sa_global_pool_from_rc11() -> None:
    pool = {"max_draft_len": 4, "enable_global_pool": True, "global_pool_size": 64}
    assert _check("1.3.0rc10", "SA", **pool) == [
        "speculative_config.enable_global_pool: unknown field",
        "speculative_config.global_pool_size: unknown field",
    ]
    assert _check("1.3.0rc11", "SA", **pool) == []


@pytest.mark.parametrize(
    ("version", "present"), [("1.3.0rc11", False), ("1.3.0rc13", False), ("1.3.0rc14", True), ("1.3.0rc23", False)]
)
def test_eagle3_max_batch_size_where_its_whole_range_has_it(version: str, present: bool) -> None:
    """A field of P13 and P14, not of P11 (rc12 unread) nor P23: the rc11-rc13 range, checked as a whole, refuses
    it; rc14-rc22 takes it."""
    assert (_check(version, "Eagle3", max_batch_size=8) == []) is present


@pytest.mark.parametrize(("version", "present"), [("1.3.0rc14", False), ("1.3.0rc23", False), ("1.3.0rc27", True)])
def test_dflash_attention_backend_from_rc27(version: str, present: bool) -> None:
    assert (_check(version, "DFlash", max_draft_len=7, attention_backend="FA4") == []) is present


@pytest.mark.parametrize(
    ("version", "default"),
    [("1.3.0rc0", 0), ("1.3.0rc2", 0), ("1.3.0rc5", None), ("1.3.0rc8", 2), ("1.3.0rc14", 2), ("1.3.0", 2)],
)
def test_ngram_default_per_range(resolve_case: Any, version: str, default: int | None) -> None:
    """P2: max_matching_ngram_size = 0, P8 on: 2, rc3-rc7 unread (no default); specdeploy emits the value
    anyway, so the YAML does not depend on the release's default."""
    field = table_for(version_line(version))["decoding"]["NGram"]["fields"]["max_matching_ngram_size"]
    assert field.get("default") == default and "defaults" not in field
    resolved = resolve_case("n", _case(LLAMA, "pytorch", version, "ngram", draft_len=4))
    assert llm_api_options(resolved, draft_len=4)["speculative_config"]["max_matching_ngram_size"] == 3


def test_dynamic_tree_needs_a_top_k(resolve_case: Any) -> None:
    """validate_eagle_config (P2, P8, P13) refuses use_dynamic_tree without dynamic_tree_max_topK > 0."""
    assert _check("1.3.0rc13", "Eagle3", use_dynamic_tree=True) == [
        "speculative_config.use_dynamic_tree needs dynamic_tree_max_topK > 0"
    ]
    assert _check("1.3.0rc2", "Eagle3", use_dynamic_tree=True, dynamic_tree_max_topK=4) == []
    data = _case(
        LLAMA, "pytorch", "1.3.0rc13", "eagle3", draft_len=3, draft_model=EAGLE3, options={"dynamic_tree": True}
    )
    with pytest.raises(ProfileError) as err:
        resolve_case("t", data)
    assert err.value.issues[0].path == ("speculative", "options", "dynamic_tree_max_topk")


def test_a_release_not_read_for_the_top_k_rule_is_not_refused_by_it(resolve_case: Any) -> None:
    """P14 and later were not read for validate_eagle_config's top-K check (UNCONFIRMED 1.3.tree_topk_since_rc14)."""
    assert _check("1.3.0rc14", "Eagle3", use_dynamic_tree=True) == []
    data = _case(LLAMA, "pytorch", "1.3.0", "eagle3", draft_len=3, draft_model=EAGLE3, options={"dynamic_tree": True})
    assert resolve_case("t", data).profile.speculative.options["dynamic_tree"] is True
