"""The one output object: chatter to stderr, data to stdout (JSON with `--json`)."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from typing import Any, TextIO


@dataclass
class Console:
    json_mode: bool = False
    debug: bool = False

    @property
    def out(self) -> TextIO:
        return sys.stdout  # looked up at call time so redirection (tests, capture) is honoured

    @property
    def err(self) -> TextIO:
        return sys.stderr

    @property
    def color(self) -> bool:
        return self.err.isatty() and "NO_COLOR" not in os.environ

    def _style(self, text: str, code: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.color else text

    def info(self, message: str) -> None:
        """Progress and explanations; never part of the machine-readable output."""
        print(message, file=self.err, flush=True)

    def warn(self, message: str) -> None:
        print(self._style("warning: ", "33") + message, file=self.err, flush=True)

    def error(self, message: str) -> None:
        print(self._style("error: ", "31;1") + message, file=self.err, flush=True)

    def ok(self, message: str) -> None:
        print(self._style("ok: ", "32") + message, file=self.err, flush=True)

    def data(self, obj: Any, text: str | None = None) -> None:
        """The command's result: JSON in --json mode, else `text` (or pretty JSON)."""
        if self.json_mode or text is None:
            print(json.dumps(obj, indent=2, sort_keys=False, default=str), file=self.out, flush=True)
        else:
            print(text, file=self.out, flush=True)


_current = Console()


def console() -> Console:
    return _current


def configure(*, json_mode: bool, debug: bool) -> Console:
    global _current
    _current = Console(json_mode=json_mode, debug=debug)
    return _current
