"""Model names are checked once, at the schema, for every command (issue 30, item 17): a hub repo id by
huggingface_hub's rules, or a local folder path. A newline passed `validate` and `build --only emit` and wrote a
two-line `TARGET=` into serve.sh; `org/x}$(...)` rendered `${SPECDEPLOY_TARGET:-org/x}...}`, so a set
SPECDEPLOY_TARGET gave trtllm-serve a wrong argument; `-rf /` was a model name. A local folder that resolves to such
a path (through the current folder) is refused where serve.sh is written."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from specdeploy.profile.checks import model_ref
from tests.helpers import LLAMA_31_8B_CONFIG, cli, local_model, write_profile

BAD = [
    "org/a\nb",
    "org/x}$(touch pwned)",
    "-rf /",
    "$(id)",
    "org/name.git",
    "org/a--b",
    "org/a..b",
    "a/b c",
    "org/-x",
    ".hidden/x",
    "org/x'y",
    "./a\nb",
    "/models/x`id`",
    "/models/a\\b",
    "a" * 97,
]
GOOD = [
    "HuggingFaceTB/SmolLM2-135M-Instruct",
    "gpt2",
    "_org/name_",
    "org/v1.5-x_y",
    "./models/llama",
    "/models/My Models/llama-3",
    "../m",
    "~/hub/x",
    "a/b/c",
]


@pytest.mark.parametrize("name", BAD, ids=repr)
def test_a_name_no_hub_id_or_folder_has_is_refused_by_the_check(name: str) -> None:
    with pytest.raises(ValueError, match="is not a"):
        model_ref(name)


@pytest.mark.parametrize("name", GOOD)
def test_hub_ids_and_folder_paths_pass(name: str) -> None:
    assert model_ref(name) == name


@pytest.mark.parametrize("key", ["target.model", "speculative.draft_model"])
@pytest.mark.parametrize("name", ["org/a\nb", "org/x}$(touch pwned)", "-rf /"], ids=repr)
@pytest.mark.parametrize("command", [("validate",), ("plan",), ("build", "--only", "emit")])
def test_every_command_refuses_it_at_validate(tmp_path: Path, command: tuple[str, ...], key: str, name: str) -> None:
    section, field = key.split(".")
    extra = {"mechanism": "eagle3", "draft_len": 3} if section == "speculative" else {}
    data = {
        "target": {"model": "meta-llama/Llama-3.1-8B-Instruct"},
        "hardware": {"gpu": "h200"},
        "speculative": {**extra},
    }
    data.setdefault(section, {})[field] = name
    profile = write_profile(tmp_path / "p.yaml", data)
    out = ("--out", str(tmp_path / "out")) if command[0] == "build" else ()
    code, _, err = cli(*command, str(profile), *out)
    assert code == 2 and f"{key}: {name!r} is not a Hugging Face repo id" in err
    assert not (tmp_path / "out").exists()


def test_serve_sh_carries_a_folder_that_passes_as_one_word(tmp_path: Path) -> None:
    model = local_model(tmp_path / "My Models" / "llama+v1@x", LLAMA_31_8B_CONFIG)
    profile = write_profile(
        tmp_path / "p.yaml",
        {
            "target": {"model": str(model)},
            "hardware": {"gpu": "h200"},
            "speculative": {"mechanism": "ngram", "draft_len": 3},
        },
    )
    code, _, err = cli("build", str(profile), "--only", "emit", "--out", str(tmp_path / "out"))
    assert code == 0, err
    script = (tmp_path / "out" / "p" / "serve.sh").read_text()
    probe = script.replace("exec ", 'printf "%s|" "$TARGET"; : ')
    shown = subprocess.run(
        ["sh", "-c", probe, "serve.sh"], capture_output=True, text=True, check=True, env={"PATH": os.environ["PATH"]}
    ).stdout
    assert shown == f"{model}|"
    given = subprocess.run(
        ["sh", "-c", probe, "serve.sh"],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": os.environ["PATH"], "SPECDEPLOY_TARGET": "/elsewhere/m"},
    ).stdout
    assert given == "/elsewhere/m|"


def test_a_folder_that_resolves_to_a_path_serve_sh_cannot_carry_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    weird = tmp_path / "we}ird"
    local_model(weird / "llama", LLAMA_31_8B_CONFIG)
    write_profile(
        weird / "p.yaml",
        {
            "target": {"model": "./llama"},
            "hardware": {"gpu": "h200"},
            "speculative": {"mechanism": "ngram", "draft_len": 3},
        },
    )
    monkeypatch.chdir(weird)
    code, _, err = cli("build", "p.yaml", "--only", "emit", "--out", "out")
    assert code == 1 and f"the model's folder resolves to '{weird}/llama' is not a local folder path" in err
    assert not (weird / "out" / "p" / "serve.sh").exists()
