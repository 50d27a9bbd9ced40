"""Issue #18 item 2 on the served path: a drafter that accepts nothing is reported in tritonserver's log.

The shipped EAGLE head is copied with its weights replaced by random ones (its training record, which promises
~40 % first-draft acceptance, kept): a damaged drafter, the third likely cause the warning names. The real
reference model serves it on a real tritonserver; the warning must reach the server's log once, and the
answers stay exact (a drafter that accepts nothing costs speed, never correctness).
Before: the in-flight loop never ran the check, so the log said nothing."""

from __future__ import annotations

import shutil
import sysconfig
from pathlib import Path

import pytest

from specdeploy.api import load_and_resolve
from specdeploy.render.actions import render_resolved
from specdeploy.render.model import RenderInputs
from specdeploy.runtime_paths import packaged_model
from tests.triton.reference_client import answer

PROMPTS = ["What is 2 + 2?", "Name three colors.", "Write a haiku about GPUs.", "Why is the sky blue?"]


def damaged_head(folder: Path) -> Path:
    """The shipped head with random weights of the same shapes (seeded), its records kept."""
    import torch
    from safetensors.torch import load_file, save_file

    shipped = packaged_model("specdeploy/smollm2-135m-eagle3")
    assert shipped is not None
    shutil.copytree(shipped, folder)
    generator = torch.Generator().manual_seed(0)
    weights = {
        name: (torch.randn(t.shape, generator=generator) * 0.05).to(t.dtype)
        for name, t in load_file(folder / "model.safetensors").items()
    }
    save_file(weights, folder / "model.safetensors")
    return folder


def test_the_served_model_logs_a_silent_drafter(backends: Path, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from specdeploy.render.server import start_server

    head = damaged_head(tmp_path / "damaged-head")
    sets = (f"speculative.draft_model={head}", "speculative.draft_len=2", "serving.max_batch_size=4")
    repo = render_resolved(
        load_and_resolve("cpu-smollm2", sets),
        tmp_path / "repo",
        inputs=RenderInputs(site_packages=sysconfig.get_paths()["purelib"]),
    ).out
    server = start_server(repo, backends, tmp_path / "server.log", extra_args=("--disable-auto-complete-config",))
    try:
        server.load("smollm2", timeout=300)
        answers = [answer(server.grpc_url, "smollm2", {"text_input": p, "max_tokens": 16}) for p in PROMPTS]
        plain = [
            answer(server.grpc_url, "smollm2", {"text_input": p, "max_tokens": 16, "draft_len": 0}) for p in PROMPTS
        ]
        log = server.log()
    finally:
        server.stop()
    assert [a["output_ids"] for a in answers] == [p["output_ids"] for p in plain]
    assert all(a["draft_len"] == 2 for a in answers)
    assert log.count("WARNING: drafter ") == 1, log[-3000:]
    line = next(x for x in log.splitlines() if "WARNING: drafter " in x)
    assert "promises about 4" in line and "damaged drafter weights" in line
