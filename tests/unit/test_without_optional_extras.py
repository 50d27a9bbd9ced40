"""A plain `pip install specdeploy` (no extras): what needs an extra says which, never a traceback, and what can
work without one does."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from specdeploy import api
from specdeploy.errors import MissingDependency
from specdeploy.render import check_pbtxt
from specdeploy.tune import run as tune_run


@pytest.fixture
def no_triton_extra(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("google", "google.protobuf", "tritonclient"):
        monkeypatch.setitem(sys.modules, name, None)  # an import of it fails, as where it is not installed
    check_pbtxt.model_config_pb2.cache_clear()
    yield
    check_pbtxt.model_config_pb2.cache_clear()


@pytest.mark.usefixtures("no_triton_extra")
def test_checking_a_config_without_the_triton_extra_names_it() -> None:
    with pytest.raises(MissingDependency) as raised:
        check_pbtxt.parse_config('name: "m"\nbackend: "python"\n', "m/config.pbtxt")
    assert "specdeploy[triton]" in str(raised.value)


def test_a_tune_report_without_matplotlib_is_written_and_says_why(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    resolved = api.load_and_resolve("h100-ngram")
    res = tune_run.tune_resolved(resolved, tmp_path, backend="model", say=lambda _: None, warn=lambda _: None)
    report = Path(str(res.report))
    assert "No figures: drawing them needs matplotlib (pip install 'specdeploy[report]')" in report.read_text()
    assert not list(report.parent.glob("*.png")) and (report.parent / "measurements.csv").is_file()


def test_the_process_exit_code_is_a_plain_int() -> None:
    from specdeploy.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["profiles", "list"])
    assert type(exited.value.code) is int and exited.value.code == 0  # an IntEnum prints as 'ExitCode.OK' on 3.10
