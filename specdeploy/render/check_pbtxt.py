"""Parse config.pbtxt into Triton's real ModelConfig message; report problems as `file:line: message`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from specdeploy.errors import MissingDependency


@dataclass(frozen=True)
class RepoIssue:
    """One problem in a repository: a path relative to its root, a 1-based line when known, a message."""

    file: str
    line: int | None
    message: str
    col: int | None = None

    def render(self) -> str:
        where = self.file + (f":{self.line}" if self.line else "") + (f":{self.col}" if self.line and self.col else "")
        return f"{where}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "col": self.col, "message": self.message}


def line_of(text: str, needle: str, after: int = 0) -> int | None:
    """1-based line of the first occurrence of `needle` at or after character `after`."""
    at = text.find(needle, after)
    return None if at < 0 else text.count("\n", 0, at) + 1


def parse_config(text: str, file: str) -> tuple[Any | None, RepoIssue | None]:
    """`(ModelConfig, None)` or `(None, issue)`; the issue carries the parser's line:col."""
    try:
        from google.protobuf import text_format
        from tritonclient.grpc import model_config_pb2
    except (ImportError, RuntimeError) as exc:
        raise MissingDependency("checking config.pbtxt needs Triton's schema (tritonclient[grpc])",
                                hint="pip install 'specdeploy[triton]'") from exc
    try:
        return text_format.Parse(text, model_config_pb2.ModelConfig()), None
    except text_format.ParseError as exc:
        line, col = exc.GetLine(), exc.GetColumn()
        message = re.sub(r"^\d+:\d+ : ", "", str(exc))
        return None, RepoIssue(file, line if line and line > 0 else None, message, col or None)


def params(config: Any) -> dict[str, str]:
    """The `parameters` map as plain strings."""
    return {key: value.string_value for key, value in config.parameters.items()}
