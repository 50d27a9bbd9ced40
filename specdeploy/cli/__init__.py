"""The click CLI: each command parses options and calls one `specdeploy.api` function.

Exit codes: 0 ok, 1 a step failed, 2 invalid profile or usage, 3 internal error.
"""

from __future__ import annotations

import sys

import click

from specdeploy import __version__
from specdeploy.cli import _commands
from specdeploy.cli._group import cli
from specdeploy.console import console
from specdeploy.errors import ExitCode, SpecdeployError

__all__ = ["cli", "main"]
_ = _commands  # registers the commands on `cli`


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI and turn every outcome into a documented exit code."""
    try:
        cli.main(args=argv, prog_name="specdeploy", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.Abort:
        console().error("aborted")
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(ExitCode.INVALID)
    except SpecdeployError as exc:
        if console().debug:
            import traceback

            traceback.print_exc()
        console().error(str(exc))
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        console().error("interrupted")
        sys.exit(130)
    except Exception:  # noqa: BLE001 - the last line of defence: an internal error, reported as such
        import traceback

        console().error(f"internal error in specdeploy {__version__} (please report it):")
        traceback.print_exc()
        sys.exit(ExitCode.INTERNAL)
    sys.exit(ExitCode.OK)
