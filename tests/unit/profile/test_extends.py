"""`extends`: a child overrides its parent's values (mappings merge, a schedule is one value, `null` drops a value back
to its default except where null is a value) and an inherited error says how to override it."""

from __future__ import annotations

from pathlib import Path

from specdeploy.profile.loader import load_profile
from tests.helpers import profile_errors, write_profile

K8S_PARENT = "extends: h200-eagle3\ndeploy:\n  targets: [k8s]\n  kubernetes:\n    namespace: llm\n"


def test_a_child_can_switch_the_mechanism_of_the_profile_it_extends(tmp_path: Path) -> None:
    from specdeploy.profile.loader import load_profile

    # h200-eagle3 sets speculative.options.one_model and a draft_model: a child switching to ngram inherited both,
    # and `options: {}` merges, `options: null` was "Input should be a valid dictionary": no way out
    child = write_profile(
        tmp_path / "mine.yaml",
        "extends: h200-eagle3\nspeculative:\n  mechanism: ngram\n  draft_model: null\n  options: null\n",
    )
    loaded = load_profile(str(child))
    assert loaded.profile.speculative.mechanism == "ngram" and loaded.profile.speculative.options == {}
    assert loaded.source_of(("speculative", "options", "one_model")) == "default"


def test_an_error_inherited_from_a_parent_says_how_to_override_it(tmp_path: Path) -> None:
    child = write_profile(
        tmp_path / "mine.yaml", "extends: h200-eagle3\nspeculative:\n  mechanism: ngram\n  draft_model: null\n"
    )
    (issue,) = profile_errors(child)
    assert issue.dotted == "speculative.options.one_model" and issue.file.endswith("h200-eagle3.yaml")
    assert (
        issue.suggestion == f"valid keys: max_matching_ngram_size, is_keep_all, is_use_oldest, is_public_pool; "
        f"inherited: set speculative.options.one_model in {child} (null drops it)"
    )


def test_a_child_null_keeps_none_where_the_field_means_something_by_it(tmp_path: Path) -> None:
    write_profile(tmp_path / "parent.yaml", K8S_PARENT)
    child = write_profile(
        tmp_path / "child.yaml", "extends: parent.yaml\ndeploy:\n  kubernetes:\n    hf_token_secret: null\n"
    )
    loaded = load_profile(str(child))
    # `null` is "no token" here; the merge dropped it and the default secret `hf-token` came back
    assert loaded.profile.deploy.kubernetes.hf_token_secret is None
    assert loaded.source_of(("deploy", "kubernetes", "hf_token_secret")) == f"{child}:4"


def test_a_child_null_drops_a_non_nullable_value_at_any_depth(tmp_path: Path) -> None:
    # h200-eagle3 has no `triton:` section: `layout: null` was kept and refused, `serving.max_batch_size: null`
    # (a section the parent has) was dropped
    child = write_profile(
        tmp_path / "child.yaml", "extends: h200-eagle3\ntriton:\n  layout: null\nserving:\n  max_batch_size: null\n"
    )
    loaded = load_profile(str(child))
    assert loaded.profile.serving.max_batch_size == 64 and loaded.profile.triton.layout == "auto"
    assert loaded.source_of(("serving", "max_batch_size")) == "default"  # plan said child.yaml:5
    assert loaded.source_of(("triton", "layout")) == "default"


def test_a_childs_schedule_replaces_its_parents(tmp_path: Path) -> None:
    """A schedule is one table: merged key by key, the child's {1: 4, 8: 2} over the parent's {1: 3, 16: 1} served
    K = 1 from 16 rows on, a row the child never wrote."""
    write_profile(tmp_path / "parent.yaml", "extends: h200-eagle3\nspeculative:\n  schedule: {1: 3, 16: 1}\n")
    child = write_profile(tmp_path / "child.yaml", "extends: parent.yaml\nspeculative:\n  schedule: {1: 4, 8: 2}\n")
    loaded = load_profile(str(child))
    assert loaded.profile.speculative.schedule == {1: 4, 8: 2}
    assert loaded.source_of(("speculative", "schedule", 16)) != f"{tmp_path / 'parent.yaml'}:3"
    options = write_profile(tmp_path / "options.yaml", "extends: parent.yaml\nspeculative:\n  options: {}\n")
    assert load_profile(str(options)).profile.speculative.schedule == {1: 3, 16: 1}  # untouched, inherited
