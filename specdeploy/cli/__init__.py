"""The click CLI: each command parses options and calls one `specdeploy.api` function.

Exit codes: 0 ok, 1 a step failed, 2 invalid profile or usage, 3 internal error (130: interrupted).
With `--json`, stdout carries one JSON document even on failure: `{"error": {code, type, message, hint,
location, issues}, "result": ...}` (`result` only when the command produced one before failing).
"""

from __future__ import annotations

import errno
import sys
from typing import Any

import click

from specdeploy import __version__
from specdeploy.cli._group import cli
from specdeploy.console import configure, console
from specdeploy.errors import ExitCode, SpecdeployError, UsageError

__all__ = ["cli", "main"]


def _error(code: int, exc: BaseException | None, message: str, hint: str | None = None) -> dict[str, Any]:
    """The JSON error object: where the problem is (the first located issue, or the option) and every issue."""
    issues = [i.to_dict() for i in getattr(exc, "issues", [])]
    location: dict[str, Any] | None = None
    if issues:
        location = {k: issues[0][k] for k in ("file", "line", "col", "path")}
        message = message.splitlines()[0].rstrip(":")  # "2 errors in profile"; `issues` has each one
    elif isinstance(exc, click.BadParameter) and exc.param is not None:
        location = {"option": exc.param.opts[0] if exc.param.opts else exc.param.name}
    elif isinstance(exc, click.NoSuchOption):
        location = {"option": exc.option_name}
    return {
        "code": code,
        "type": type(exc).__name__ if exc else "Interrupted",
        "message": message,
        "hint": hint,
        "location": location,
        "issues": issues,
    }


def _failed(exc: SpecdeployError) -> tuple[int, dict[str, Any]]:
    """A user-facing error: its message (a traceback only with --debug) and its exit code."""
    if console().debug:
        import traceback  # only on a failure: its import (linecache, tokenize) would cost every run ~10 ms

        traceback.print_exc()
    console().error(str(exc))
    return exc.exit_code, _error(exc.exit_code, exc, exc.message, exc.hint)


def _run(args: list[str]) -> tuple[int, dict[str, Any] | None]:
    """Run the CLI; (exit code, the JSON error object or None). Chatter and messages go to stderr."""
    try:
        cli.main(args=args, prog_name="specdeploy", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return exc.exit_code, None
    except click.Abort as exc:
        console().error("aborted")
        return 130, _error(130, exc, "aborted")
    except click.ClickException as exc:
        exc.show()
        return ExitCode.INVALID, _error(ExitCode.INVALID, exc, exc.format_message())
    except SpecdeployError as exc:
        return _failed(exc)
    except KeyboardInterrupt:
        console().error("interrupted")
        return 130, _error(130, None, "interrupted")
    except Exception as exc:  # noqa: BLE001 - the last line of defence: an internal error, reported as such
        if isinstance(exc, OSError) and exc.errno == errno.ENAMETOOLONG:  # only a user's name is that long
            return _failed(
                UsageError(
                    f"file name too long: {str(exc.filename)[:80]}...",
                    hint="a path argument or profile value longer than the OS allows",
                )
            )
        console().error(f"internal error in specdeploy {__version__} (please report it):")
        import traceback

        traceback.print_exc()
        return ExitCode.INTERNAL, _error(
            ExitCode.INTERNAL, exc, f"internal error: {exc!r}", "please report it with --debug output"
        )
    return ExitCode.OK, None


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI and turn every outcome into a documented exit code (and, with --json, one
    JSON document on stdout)."""
    args = list(sys.argv[1:] if argv is None else argv)
    words = args[: args.index("--")] if "--" in args else args
    configure(json_mode=False, debug="--debug" in words)
    code, error = _run(args)
    if "--json" in words:  # also when click failed before it reached the option
        console().json_mode = True
    try:
        console().finish(error)
    except ValueError as exc:  # a result JSON cannot hold (NaN, Infinity): never printed, an internal error
        console().result = None
        console().error(f"internal error in specdeploy {__version__} (please report it): {exc}")
        code = ExitCode.INTERNAL
        console().finish(_error(code, exc, f"internal error: {exc}", "please report it with --debug output"))
    sys.exit(int(code))  # a plain int on every Python (3.10 prints an IntEnum by its name)
