"""`--only`/`--from` builds never record a profile their unselected steps' outputs were not built for, and a
re-render never deletes files no step wrote (and its log names every file it changes or deletes)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from specdeploy.api import build
from specdeploy.errors import UsageError
from specdeploy.execute.verify import verify
from tests.helpers import needs_triton_schema

pytestmark = needs_triton_schema  # every test builds, and the build renders Triton's config


def _built(resolved: Any, tmp_path: Path) -> tuple[str, Path, Path]:
    out = tmp_path / "out"
    profile = str(resolved.loaded.file)
    assert build(profile, out=out).ok
    return profile, out, out / "tiny"


def test_a_changed_profile_with_only_render_is_refused_before_anything_is_written(
    tmp_path: Path, resolved: Any
) -> None:
    profile, out, art = _built(resolved, tmp_path)
    before = {name: (art / name).read_bytes() for name in ("manifest.json", "specdeploy.lock", "llm_api_options.yaml")}
    with pytest.raises(UsageError) as err:
        build(profile, ("serving.max_batch_size=3",), out=out, only=("render", "check"))
    assert "emit.llm_api: profile serving.max_batch_size changed" in err.value.message
    assert "--only emit.llm_api" in (err.value.hint or "")
    assert {name: (art / name).read_bytes() for name in before} == before
    assert verify(art).ok
    assert build(profile, ("serving.max_batch_size=3",), out=out, only=("emit", "render", "check")).ok  # as told
    assert "max_batch_size: 3" in (art / "llm_api_options.yaml").read_text() and verify(art).ok


def test_an_unselected_step_between_selected_ones_is_not_built_over(tmp_path: Path, resolved: Any) -> None:
    profile, out, art = _built(resolved, tmp_path)
    result = build(profile, ("serving.max_batch_size=3",), out=out, only=("emit", "check"))
    statuses = {s.id: (s.status, s.reason) for s in result.steps}
    assert statuses["emit.llm_api"][0] == "rebuilt"
    assert statuses["check.triton"] == (
        "skipped",
        "dependency out of date (render.triton: output of emit.llm_api "
        "changed; profile serving.max_batch_size changed)",
    )
    assert not result.ok and not verify(art).ok


def test_a_re_render_refuses_to_delete_a_file_no_step_wrote(tmp_path: Path, resolved: Any) -> None:
    profile, out, art = _built(resolved, tmp_path)
    notes = art / "triton" / "NOTES.txt"
    notes.write_text("how we serve this")
    result = build(profile, ("triton.model_name=llm",), out=out)
    render = next(s for s in result.steps if s.id == "render.triton")
    assert render.status == "failed" and "triton/NOTES.txt" in render.reason
    assert notes.read_text() == "how we serve this"


def test_the_render_log_lists_every_change_and_delete(tmp_path: Path, resolved: Any) -> None:
    profile, out, art = _built(resolved, tmp_path)
    old = json.loads((art / "triton" / "specdeploy-repo.json").read_text())["models"]
    assert build(profile, ("triton.model_name=llm",), out=out).ok
    log = (art / ".specdeploy" / "logs" / "render.triton.log").read_text()
    assert f"delete    {old[0]}/config.pbtxt" in log and "create    llm/config.pbtxt" in log
    assert "changed   specdeploy-repo.json" in log
    assert verify(art).ok
