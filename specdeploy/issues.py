"""Issue: one problem found in a profile, located in its file when it can be."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

from specdeploy.errors import UsageError

Severity = Literal["error", "warning", "skipped"]
Path = tuple[str | int, ...]


@dataclass(frozen=True)
class Issue:
    """`file:line:col key.path: message`, plus a suggestion and the offending line when known."""

    path: Path
    message: str
    suggestion: str | None = None
    severity: Severity = "error"
    file: str | None = None
    line: int | None = None
    col: int | None = None
    snippet: str | None = field(default=None, compare=False)
    default_fails: bool = field(default=False, compare=False)
    """The key's default fails the same check: an inherited value's hint does not offer `null` (the default)."""

    @property
    def dotted(self) -> str:
        return ".".join(str(p) for p in self.path) or "<root>"

    def located(self, file: str, line: int, col: int, snippet: str | None) -> Issue:
        return replace(self, file=file, line=line, col=col, snippet=snippet)

    def render(self) -> str:
        where = (
            f"{self.file}:{self.line}:{self.col} "
            if self.file and self.line
            else (f"{self.file}: " if self.file else "")
        )
        tag = "" if self.severity == "error" else f"[{self.severity}] "
        text = f"{where}{tag}{self.dotted}: {self.message}"
        if self.suggestion:
            text += f"\n    hint: {self.suggestion}"
        if self.snippet:
            text += "\n" + self.snippet
        return text

    def to_dict(self) -> dict[str, object]:
        return {
            "file": self.file,
            "line": self.line,
            "col": self.col,
            "path": self.dotted,
            "message": self.message,
            "suggestion": self.suggestion,
            "severity": self.severity,
        }


class ProfileError(UsageError):
    """Every error of a profile at once (exit 2)."""

    def __init__(self, issues: list[Issue]) -> None:
        errors = [i for i in issues if i.severity == "error"]
        count = len(errors)
        super().__init__(
            f"{count} error{'s' if count != 1 else ''} in profile:\n" + "\n".join(i.render() for i in errors),
            issues=errors,
        )
