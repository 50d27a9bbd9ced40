"""`specdeploy generate`: bad input exits 2 before any model loads; other backends are refused clearly."""

from __future__ import annotations

import pytest

from tests.helpers import cli


@pytest.mark.parametrize(
    "args, message",
    [
        (["generate", "cpu-smollm2", "   "], "the prompt is empty"),
        (["generate", "cpu-smollm2", "hi", "--max-tokens", "0"], "0 is not in the range"),
        (["generate", "h200-eagle3", "hi"], "`generate` runs the CPU reference runtime"),
        (
            ["generate", "cpu-smollm2", "hi", "--set", "speculative.mechanism=mtp"],
            "does not run on backend 'reference'",
        ),
    ],
)
def test_bad_input_exits_2(args: list[str], message: str) -> None:
    code, _, err = cli(*args)
    assert code == 2, err
    assert message in err and "Traceback" not in err
