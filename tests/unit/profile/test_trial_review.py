"""Defects a review of the first-contact trial's fixes found (each test failed before its fix)."""

from __future__ import annotations

from pathlib import Path

from specdeploy.profile.loader import load_profile
from tests.helpers import write_profile

K8S_PARENT = "extends: h200-eagle3\ndeploy:\n  targets: [k8s]\n  kubernetes:\n    namespace: llm\n"


def test_a_child_null_keeps_none_where_the_field_means_something_by_it(tmp_path: Path) -> None:
    write_profile(tmp_path / "parent.yaml", K8S_PARENT)
    child = write_profile(tmp_path / "child.yaml", "extends: parent.yaml\ndeploy:\n  kubernetes:\n"
                          "    hf_token_secret: null\n")
    loaded = load_profile(str(child))
    # `null` is "no token" here; the merge dropped it and the default secret `hf-token` came back
    assert loaded.profile.deploy.kubernetes.hf_token_secret is None
    assert loaded.source_of(("deploy", "kubernetes", "hf_token_secret")) == f"{child}:4"


def test_a_child_null_drops_a_non_nullable_value_at_any_depth(tmp_path: Path) -> None:
    # h200-eagle3 has no `triton:` section: `layout: null` was kept and refused, `serving.max_batch_size: null`
    # (a section the parent has) was dropped
    child = write_profile(tmp_path / "child.yaml", "extends: h200-eagle3\ntriton:\n  layout: null\n"
                          "serving:\n  max_batch_size: null\n")
    loaded = load_profile(str(child))
    assert loaded.profile.serving.max_batch_size == 64 and loaded.profile.triton.layout == "auto"
    assert loaded.source_of(("serving", "max_batch_size")) == "default"  # plan said child.yaml:5
    assert loaded.source_of(("triton", "layout")) == "default"
