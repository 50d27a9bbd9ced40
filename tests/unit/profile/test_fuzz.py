"""Fuzzed profiles never produce a traceback: the CLI exits 0 or 2 with a located message."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import cli
from tests.unit.profile.strategies import SHIPPED, key_paths, mutate, values


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=st.sampled_from(sorted(SHIPPED)),
    data=st.data(),
    value=values,
    delete=st.booleans(),
    extra_key=st.text(min_size=1, max_size=12),
)
def test_mutated_profiles_never_traceback(
    tmp_path: Path, name: str, data: st.DataObject, value: object, delete: bool, extra_key: str
) -> None:
    profile = yaml.safe_load(yaml.safe_dump(SHIPPED[name]))
    path = data.draw(st.sampled_from(key_paths(profile) + [[extra_key], ["serving", extra_key]]))
    mutated = mutate(profile, path, value, delete)
    file = tmp_path / "fuzz.yaml"
    file.write_text(yaml.safe_dump(mutated, allow_unicode=True))
    code, _, err = cli("validate", str(file))
    assert code in (0, 2), err
    assert "Traceback" not in err and "internal error" not in err
    if code == 2:
        assert str(file) in err or "--set" in err


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=200))
def test_arbitrary_text_never_tracebacks(tmp_path: Path, text: str) -> None:
    file = tmp_path / "any.yaml"
    file.write_text(text)
    code, _, err = cli("validate", str(file))
    assert code in (0, 2) and "Traceback" not in err


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"\x00\x01\x02binary",
        b"a: &x [*x]\n",
        b"a: !!binary aGVsbG8=\n",
        b"target: !custom {model: m}\n",
        b"!!python/object:os.system {}\n",
        "target: {model: \u00e9\u6f22\u5b57}\nserving: {max_batch_size: 99999999999999999999}\n".encode(),
        b"base: &b {model: m}\ntarget:\n  <<: *b\n",
    ],
)
def test_hostile_files(tmp_path: Path, content: bytes) -> None:
    file = tmp_path / "h.yaml"
    file.write_bytes(content)
    code, _, err = cli("validate", str(file))
    assert code in (0, 2) and "Traceback" not in err, err


def test_directory_and_missing_file(tmp_path: Path) -> None:
    assert cli("validate", str(tmp_path))[0] == 2
    code, _, err = cli("validate", str(tmp_path / "missing.yaml"))
    assert code == 2 and "file not found" in err
