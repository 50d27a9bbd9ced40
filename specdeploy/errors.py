"""One exception tree; each user-facing error carries the exit code the CLI returns.

The CLI maps `SpecdeployError` to its `exit_code` and prints only the message (no traceback unless
`--debug`); anything else is an internal error (exit 3).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import IntEnum
from typing import Any


class ExitCode(IntEnum):
    """Documented process exit codes."""

    OK = 0
    STEP_FAILED = 1
    INVALID = 2
    INTERNAL = 3


class SpecdeployError(Exception):
    """Base of every error meant for a person: a message, an optional hint, an exit code."""

    exit_code: ExitCode = ExitCode.STEP_FAILED

    def __init__(self, message: str, *, hint: str | None = None, issues: Sequence[Any] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.issues = list(issues)
        """Located problems (`specdeploy.issues.Issue`) behind the error, for --json's `location` and `issues`."""

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n  hint: {self.hint}"


class UsageError(SpecdeployError):
    """Bad input from the user: a profile, an option, a file (exit 2)."""

    exit_code = ExitCode.INVALID


class StepFailed(SpecdeployError):
    """A build, measure or render step failed (exit 1)."""

    exit_code = ExitCode.STEP_FAILED


class MissingDependency(SpecdeployError):
    """An optional component (TRT-LLM, tritonserver, torch...) is not installed (exit 1)."""

    exit_code = ExitCode.STEP_FAILED
