"""The loader reports every error at once, located, with suggestions; YAML traps are handled."""

from __future__ import annotations

import copy
import pickle
from pathlib import Path

import pytest

from specdeploy.api import load_and_resolve
from specdeploy.profile.loader import load_profile
from tests.helpers import profile_errors, write_profile

BASE = "target:\n  model: meta-llama/Llama-3.1-8B-Instruct\n"


def test_all_errors_at_once_with_location_and_suggestion(tmp_path: Path) -> None:
    path = write_profile(
        tmp_path / "p.yaml",
        BASE + "  quantisation: fp8\nhardware:\n  gpu: h100\n"
        "serving:\n  max_batch_size: -3\ntune:\n  objective: fastest\n",
    )
    issues = profile_errors(path)
    by_path = {i.dotted: i for i in issues}
    assert set(by_path) == {"target.quantisation", "hardware.gpu", "serving.max_batch_size", "tune.objective"}
    assert (by_path["target.quantisation"].line, by_path["target.quantisation"].col) == (3, 3)
    assert by_path["target.quantisation"].suggestion == "did you mean 'quantization'?"
    assert "'h100-sxm' or 'h100-pcie'" in by_path["hardware.gpu"].suggestion
    assert by_path["serving.max_batch_size"].line == 7
    rendered = by_path["serving.max_batch_size"].render()
    assert rendered.startswith(f"{path}:7:3 serving.max_batch_size:")
    assert "max_batch_size: -3" in rendered  # the offending line is shown


def test_duplicate_keys_are_rejected(tmp_path: Path) -> None:
    path = write_profile(tmp_path / "p.yaml", BASE + "serving:\n  max_batch_size: 8\n  max_batch_size: 16\n")
    (issue,) = profile_errors(path)
    assert issue.line == 5 and "duplicate key 'max_batch_size' (first defined on line 4)" in issue.message


def test_yaml_11_exponent_reads_as_number(tmp_path: Path) -> None:
    path = write_profile(
        tmp_path / "p.yaml", BASE + "serving:\n  kv_cache_free_gpu_memory_fraction: 5e-1\n  max_num_tokens: 1e4\n"
    )
    profile = load_profile(str(path)).profile
    assert profile.serving.kv_cache_free_gpu_memory_fraction == 0.5
    assert profile.serving.max_num_tokens == 10000


@pytest.mark.parametrize(
    "text, where",
    [
        ("  model: on\n", "target.model"),
        ("  model: m\nserving:\n  max_batch_size: yes\n", "serving.max_batch_size"),
    ],
)
def test_yaml_11_booleans_are_not_silent(tmp_path: Path, text: str, where: str) -> None:
    path = write_profile(tmp_path / "p.yaml", "target:\n" + text)
    (issue,) = profile_errors(path)
    assert issue.dotted == where and "YAML boolean" in issue.message


def test_python_tags_are_refused(tmp_path: Path) -> None:
    path = write_profile(tmp_path / "p.yaml", BASE + "tune:\n  dataset: !!python/object/apply:os.system ['true']\n")
    (issue,) = profile_errors(path)
    assert issue.line == 4 and "YAML error" in issue.message and "!!python" in (issue.suggestion or "")


def test_extends_chain_and_sources(tmp_path: Path) -> None:
    write_profile(tmp_path / "base.yaml", BASE + "serving:\n  max_batch_size: 8\n  max_seq_len: 2048\n")
    write_profile(tmp_path / "mid.yaml", "extends: base.yaml\nserving:\n  max_batch_size: 16\n")
    child = write_profile(tmp_path / "child.yaml", "extends: mid.yaml\ntune:\n  prompts: 4\n")
    loaded = load_profile(str(child), ("serving.max_seq_len=4096",))
    assert loaded.profile.serving.max_batch_size == 16
    assert loaded.profile.serving.max_seq_len == 4096
    assert loaded.source_of(("serving", "max_batch_size")) == f"{tmp_path / 'mid.yaml'}:3"
    assert loaded.source_of(("target", "model")) == f"{tmp_path / 'base.yaml'}:2"
    assert loaded.source_of(("serving", "max_seq_len")) == "--set"
    assert loaded.source_of(("hardware", "gpu")) == "default"


def test_extends_shipped_profile_by_name(tmp_path: Path) -> None:
    child = write_profile(tmp_path / "mine.yaml", "extends: h200-eagle3\nserving:\n  max_batch_size: 8\n")
    loaded = load_profile(str(child))
    assert loaded.profile.speculative.mechanism == "eagle3"
    assert loaded.profile.serving.max_batch_size == 8


def test_extends_cycle_is_an_error(tmp_path: Path) -> None:
    write_profile(tmp_path / "a.yaml", "extends: b.yaml\n" + BASE)
    write_profile(tmp_path / "b.yaml", "extends: a.yaml\n" + BASE)
    issues = profile_errors(tmp_path / "a.yaml")
    assert any("extends cycle" in i.message for i in issues)


def test_set_unknown_key_suggests(tmp_path: Path) -> None:
    path = write_profile(tmp_path / "p.yaml", BASE)
    (issue,) = profile_errors(path, "speculative.draft_lne=3")
    assert issue.file == "--set" and "did you mean 'speculative.draft_len'" in issue.message


def test_set_is_typed(tmp_path: Path) -> None:
    path = write_profile(tmp_path / "p.yaml", BASE)
    (issue,) = profile_errors(path, "serving.max_batch_size=lots")
    assert issue.dotted == "serving.max_batch_size" and issue.file == "--set"
    assert load_profile(str(path), ("serving.max_batch_size=12",)).profile.serving.max_batch_size == 12


def test_mechanism_options_are_validated_by_the_plugin(tmp_path: Path) -> None:
    path = write_profile(
        tmp_path / "p.yaml", BASE + "speculative:\n  mechanism: ngram\n  options:\n    max_matching_ngram_sise: 3\n"
    )
    (issue,) = profile_errors(path)  # options errors come with the cross-field rules, not before them
    assert issue.dotted == "speculative.options.max_matching_ngram_sise" and issue.line == 6
    assert issue.suggestion == "did you mean 'max_matching_ngram_size'?"


@pytest.mark.parametrize(
    "content, message",
    [
        ("", "empty profile"),
        ("# only a comment\n", "empty profile"),
        ("- a\n- b\n", "must be a mapping"),
        ("target: [\n", "YAML error"),
    ],
)
def test_degenerate_files(tmp_path: Path, content: str, message: str) -> None:
    (issue,) = profile_errors(write_profile(tmp_path / "p.yaml", content))
    assert message in issue.message


def test_missing_binary_and_directory(tmp_path: Path) -> None:
    assert "file not found" in profile_errors(tmp_path / "nope.yaml")[0].message
    assert "directory" in profile_errors(tmp_path)[0].message
    binary = tmp_path / "b.yaml"
    binary.write_bytes(b"\xff\xfe\x00\x01")
    assert "not a UTF-8 text file" in profile_errors(binary)[0].message


def test_a_resolved_profile_travels() -> None:
    """A Ray task pickles what it gets (`tune --ray`), and a copy holds the same validated values."""
    resolved = load_and_resolve("h200-eagle3")
    for copied in (pickle.loads(pickle.dumps(resolved)), copy.deepcopy(resolved)):
        assert copied.profile == resolved.profile and copied.loaded.options == resolved.loaded.options
