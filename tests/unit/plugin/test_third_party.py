"""A third-party mechanism installed from a temporary package validates and plans like a built-in."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.helpers import pip_install_into

PLUGIN = """
from pydantic import BaseModel, ConfigDict, Field
from specdeploy.plugin import Mechanism


class EchoOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    window: int = Field(2, ge=1)


class Echo(Mechanism):
    name = "echo"
    summary = "third-party test mechanism"
    Options = EchoOptions
    support = {"pytorch": ("1.2", "1.3")}
    max_draft_len = 6
"""


def install_package(
    tmp_path: Path, name: str, entry: str, module_source: str, files: dict[str, str] | None = None
) -> Path:
    src = tmp_path / f"src-{name}"
    (src / name).mkdir(parents=True)
    (src / name / "__init__.py").write_text(module_source)
    for file, text in (files or {}).items():
        (src / name / file).write_text(text)
    (src / "pyproject.toml").write_text(
        textwrap.dedent(f'''
        [build-system]
        requires = ["hatchling"]
        build-backend = "hatchling.build"
        [project]
        name = "{name}"
        version = "0.0.1"
        [project.entry-points."specdeploy.mechanisms"]
        {entry}
    ''')
    )
    target = tmp_path / "site"
    pip_install_into(target, str(src))
    return target


def specdeploy(site: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run(
        [sys.executable, "-m", "specdeploy", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=60
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install_package(
        tmp_path_factory.mktemp("plugin"), "specdeploy_echo", 'echo = "specdeploy_echo:Echo"', PLUGIN
    )


def test_third_party_mechanism_validates_and_plans(site: Path, tmp_path: Path) -> None:
    profile = tmp_path / "p.yaml"
    profile.write_text(
        "target: {model: meta-llama/Llama-3.1-8B-Instruct}\nhardware: {gpu: h200}\n"
        "speculative: {mechanism: echo, draft_len: 4, options: {window: 3}}\n"
    )
    assert specdeploy(site, "validate", str(profile), cwd=tmp_path).returncode == 0
    planned = specdeploy(site, "plan", str(profile), cwd=tmp_path)
    assert planned.returncode == 0 and "speculative.options.window" in planned.stdout
    listed = specdeploy(site, "mechanisms", cwd=tmp_path)
    assert "echo" in listed.stdout and "specdeploy_echo" not in listed.stderr


LAZY_PLUGIN = """
from specdeploy.plugin import Mechanism, lazy_options


class Lazy(Mechanism):
    name = "lazy"
    Options = lazy_options("specdeploy_lazy.options:LazyOptions")
    support = {"pytorch": ("1.2", "1.3")}
"""
LAZY_OPTIONS = """
from pydantic import BaseModel, ConfigDict, Field


class LazyOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    window: int = Field(2, ge=1, description="Tokens looked back.")
"""


def test_lazy_options_are_imported_only_for_a_profile_that_names_the_mechanism(tmp_path: Path) -> None:
    site = install_package(
        tmp_path, "specdeploy_lazy", 'lazy = "specdeploy_lazy:Lazy"', LAZY_PLUGIN, {"options.py": LAZY_OPTIONS}
    )
    profile = tmp_path / "p.yaml"
    profile.write_text(
        "target: {model: meta-llama/Llama-3.1-8B-Instruct}\nhardware: {gpu: h200}\n"
        "speculative: {mechanism: lazy, draft_len: 4, options: {window: 3}}\n"
    )
    code = (
        "import sys, runpy\nsys.argv = ['specdeploy', *sys.argv[1:]]\ntry:\n"
        "    runpy.run_module('specdeploy', run_name='__main__')\nexcept SystemExit as e:\n    code = e.code\n"
        "print('OPTIONS', 'specdeploy_lazy.options' in sys.modules, 'EXIT', code, file=sys.stderr)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}

    def imports_options(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60
        )

    listed = imports_options("mechanisms")  # loads every plugin
    assert "lazy" in listed.stdout and "OPTIONS False EXIT 0" in listed.stderr, listed.stderr
    planned = imports_options("plan", str(profile))
    assert "OPTIONS True EXIT 0" in planned.stderr and "speculative.options.window" in planned.stdout, planned.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text(profile.read_text().replace("window: 3", "window: 0"))
    failed = specdeploy(site, "validate", str(bad), cwd=tmp_path)
    assert (
        failed.returncode == 2
        and "speculative.options.window: Input should be greater than or equal to 1" in failed.stderr
    )


def test_third_party_rules_apply(site: Path, tmp_path: Path) -> None:
    profile = tmp_path / "p.yaml"
    profile.write_text(
        "target: {model: meta-llama/Llama-3.1-8B-Instruct}\nhardware: {gpu: h200}\n"
        "speculative: {mechanism: echo, draft_len: 9, options: {window: 0}}\n"
    )
    result = specdeploy(site, "validate", str(profile), cwd=tmp_path)
    assert result.returncode == 2
    assert "speculative.options.window" in result.stderr and "echo drafts at most 6 tokens" in result.stderr


def test_a_duplicate_name_is_an_error_naming_both(tmp_path: Path) -> None:
    site = install_package(
        tmp_path,
        "specdeploy_dup",
        'ngram = "specdeploy_dup:Ngram"',
        "from specdeploy_mechanisms.ngram import Ngram as _N\n\nclass Ngram(_N):\n    pass\n",
    )
    profile = tmp_path / "p.yaml"
    profile.write_text("target: {model: m}\nspeculative: {mechanism: ngram}\n")
    result = specdeploy(site, "validate", str(profile), cwd=tmp_path)
    assert result.returncode == 1
    assert "mechanism 'ngram' is defined by both" in result.stderr and "specdeploy_dup:Ngram" in result.stderr


REFUSING_PLUGIN = """
from pydantic import BaseModel, ConfigDict, Field
from specdeploy.engines.trtllm.declare import TrtllmDecoding
from specdeploy.plugin import Mechanism


class WideOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    wide: bool = Field(False, description="Match across requests.")


class Wide(Mechanism):
    name = "wide"
    Options = WideOptions
    chain = False
    engines = {"pytorch": TrtllmDecoding(decoding_type={"1.3": "NGram"},
                                         refuse=lambda o, line: "no wide matching on TensorRT-LLM" if o.wide else None)}
"""


def test_a_declared_refusal_is_a_located_usage_error_not_a_traceback(tmp_path: Path) -> None:
    """The plugin refuses its option only through `TrtllmDecoding.refuse` (no `check`). Before: validate passed and
    `build --dry-run` died with a ValueError traceback from the emitter (exit 3)."""
    site = install_package(tmp_path, "specdeploy_wide", 'wide = "specdeploy_wide:Wide"', REFUSING_PLUGIN)
    profile = tmp_path / "p.yaml"
    profile.write_text(
        "target: {model: meta-llama/Llama-3.1-8B-Instruct}\nhardware: {gpu: h200}\n"
        "runtime: {trtllm_version: 1.3.0}\n"
        "speculative: {mechanism: wide, draft_len: 4, options: {wide: true}}\n"
    )
    said = "p.yaml:4:46 speculative.options: no wide matching on TensorRT-LLM (TensorRT-LLM range 1.3.0rc27+)"
    for command in (("validate", str(profile)), ("build", str(profile), "--dry-run")):
        result = specdeploy(site, *command, cwd=tmp_path)
        assert result.returncode == 2 and said in result.stderr, result.stderr
        assert "Traceback" not in result.stderr
    error = json.loads(specdeploy(site, "--json", "build", str(profile), "--dry-run", cwd=tmp_path).stdout)["error"]
    assert error["type"] == "ProfileError" and error["location"]["path"] == "speculative.options"
    profile.write_text(profile.read_text().replace("wide: true", "wide: false"))
    allowed = specdeploy(site, "build", str(profile), "--dry-run", cwd=tmp_path)
    assert allowed.returncode == 0 and "decoding_type: NGram" in allowed.stdout, allowed.stderr
