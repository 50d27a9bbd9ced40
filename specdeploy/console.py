"""The one output object: chatter to stderr, data to stdout (JSON with `--json`)."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from typing import Any, TextIO


@dataclass
class Console:
    """In --json mode the result is held until the command ends, so stdout carries exactly one JSON document:
    the result on success, `{"error": {...}, "result": ...}` on failure (`finish`)."""

    json_mode: bool = False
    debug: bool = False
    result: Any = None

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
        """The command's result: held for `finish` in --json mode, else `text` (or pretty JSON) now."""
        if self.json_mode:
            self.result = obj
        else:
            self._write(text if text is not None else _dumps(obj))

    def finish(self, error: dict[str, Any] | None = None) -> None:
        """--json: print the one document, the result or the error (with whatever result there was)."""
        if not self.json_mode:
            return
        if error is None:
            if self.result is not None:
                self._write(_dumps(self.result))
            return
        doc = {"error": error} if self.result is None else {"error": error, "result": self.result}
        self._write(_dumps(doc))

    def _write(self, text: str) -> None:
        """Data to stdout; a reader that left (`specdeploy plan X | head`) is not an error of ours: the rest
        goes nowhere (click would turn the EPIPE into exit 1)."""
        try:
            print(text, file=self.out, flush=True)
        except BrokenPipeError:
            os.dup2(os.open(os.devnull, os.O_WRONLY), self.out.fileno())


def _dumps(obj: Any) -> str:
    return json.dumps(obj, indent=2, sort_keys=False, default=str, allow_nan=False)  # RFC 8259: no NaN or Infinity


_current = Console()


def console() -> Console:
    return _current


def configure(*, json_mode: bool, debug: bool) -> Console:
    global _current
    _current = Console(json_mode=json_mode, debug=debug)
    return _current
