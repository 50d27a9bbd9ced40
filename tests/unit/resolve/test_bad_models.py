"""A target that can never work is invalid at `validate` (exit 2): a file, an empty name, a config.json with
impossible sizes, a local path with no folder or no config.json there. These built with exit 0, failed in `plan`
with an OverflowError (exit 3), or were "valid"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import LLAMA_31_8B_CONFIG, cli, local_model, write_profile


def _profile(tmp_path: Path, model: str) -> Path:
    return write_profile(
        tmp_path / "p.yaml",
        {
            "target": {"model": model},
            "hardware": {"gpu": "h200"},
            "speculative": {"mechanism": "ngram", "draft_len": 3},
        },
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"hidden_size": 0}, "config.json hidden_size: 0 is not a positive whole number"),
        ({"hidden_size": float("inf")}, "config.json hidden_size: inf is not a positive whole number"),
        ({"hidden_size": 4100}, "hidden_size 4100 is not divisible by num_attention_heads 32"),
        ({"num_key_value_heads": 5}, "num_attention_heads 32 is not a multiple of num_key_value_heads 5"),
        ({"max_position_embeddings": -4096}, "config.json max_position_embeddings: -4096 is not a positive whole"),
        ({"intermediate_size": -1}, "config.json intermediate_size: -1 is not a non-negative whole number"),
        ({"vocab_size": "many"}, "config.json vocab_size: 'many' is not a non-negative whole number"),
        ({"num_hidden_layers": True}, "config.json num_hidden_layers: True is not a positive whole number"),
        ({"hidden_size": 1.06e153}, "config.json hidden_size: 1.06e+153 is larger than any model's (2**40 at most)"),
    ],
)
def test_impossible_config_json_is_invalid(tmp_path: Path, change: dict[str, object], message: str) -> None:
    model = local_model(tmp_path / "m", {**LLAMA_31_8B_CONFIG, **change})
    profile = _profile(tmp_path, str(model))
    for command in ("validate", "plan"):
        code, _, err = cli(command, str(profile))
        assert code == 2 and message in err and f"{profile}:2:3 target.model" in err, err


def test_json_infinity_in_a_real_file(tmp_path: Path) -> None:
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text(
        json.dumps(LLAMA_31_8B_CONFIG).replace('"hidden_size": 4096', '"hidden_size": Infinity')
    )
    code, _, err = cli("plan", str(_profile(tmp_path, str(model))))
    assert code == 2 and "hidden_size: inf" in err


@pytest.mark.parametrize("model", ["", "   "])
def test_an_empty_model_is_invalid(tmp_path: Path, model: str) -> None:
    code, _, err = cli("validate", str(_profile(tmp_path, model)))
    assert code == 2 and "the model reference is empty" in err


def test_a_file_as_the_model_is_invalid(tmp_path: Path) -> None:
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"w")
    profile = _profile(tmp_path, str(weights))
    code, _, err = cli("validate", str(profile))
    assert code == 2 and "is a file, not a model folder" in err
    code, _, err = cli("build", str(profile), "--out", str(tmp_path / "out"))
    assert code == 2


@pytest.mark.parametrize(("model", "expected"), [("x" * 5000, 2), ("a/" + "b" * 300, 2)])
def test_a_model_name_the_os_refuses_is_never_a_crash(tmp_path: Path, model: str, expected: int) -> None:
    """A name the OS refuses (ENAMETOOLONG) escaped Path.exists() or the hub cache lookup as an internal error
    (exit 3). Both are invalid (exit 2): no hub repo id is that long (checks.model_ref)."""
    for command in ("validate", "plan"):
        code, _, err = cli(command, str(_profile(tmp_path, model)))
        assert code == expected and "internal error" not in err and (expected == 0 or "target.model" in err), err


@pytest.mark.parametrize(
    "model",
    [
        "./nonexistent-folder",
        "../nonexistent-folder",
        "~/nonexistent-folder",
        "/nonexistent-folder",
        "models/llama/nonexistent",
    ],
)
def test_a_local_path_with_no_folder_is_invalid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: str) -> None:
    monkeypatch.chdir(tmp_path)
    profile = _profile(tmp_path, str(local_model(tmp_path / "m", LLAMA_31_8B_CONFIG)))
    code, _, err = cli("validate", str(profile), "--set", f"target.model={model}")
    assert code == 2 and f"--set: target.model: no folder {model!r}" in err, err
    assert "hint: name a folder holding config.json, or a Hugging Face repo id" in err


def test_a_local_folder_without_config_json_is_invalid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "weights").mkdir()
    code, _, err = cli("validate", str(_profile(tmp_path, "./weights")))
    assert code == 2 and f"target.model: './weights' ({tmp_path / 'weights'}) has no config.json" in err, err


def test_a_missing_local_drafter_is_invalid_too(tmp_path: Path) -> None:
    profile = write_profile(
        tmp_path / "p.yaml",
        {
            "target": {"model": str(local_model(tmp_path / "m", LLAMA_31_8B_CONFIG))},
            "hardware": {"gpu": "h200"},
            "speculative": {"mechanism": "draft_target", "draft_model": str(tmp_path / "nodrafter"), "draft_len": 3},
        },
    )
    code, _, err = cli("validate", str(profile))
    assert code == 2 and f"{profile}:7:3 speculative.draft_model: no folder" in err, err


def test_a_hub_id_not_cached_is_still_valid(tmp_path: Path) -> None:
    """`org/name` may be the hub's: the model-dependent checks are skipped, not failed."""
    code, _, err = cli("validate", str(_profile(tmp_path, "acme/not-cached-here")))
    assert code == 0 and "model-dependent checks skipped" in err, err
