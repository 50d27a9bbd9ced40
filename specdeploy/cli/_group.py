"""The root click group and the options every command shares.

`--json` and `--debug` work before the command (`specdeploy --json plan X`) and after it
(`specdeploy plan X --json`): every command and group carries them.
"""

from __future__ import annotations

from typing import Any

import click
from click.shell_completion import CompletionItem

from specdeploy import __version__
from specdeploy.console import console

EPILOG = """\b
Exit codes: 0 ok, 1 a step failed, 2 invalid profile or usage, 3 internal error.
Examples:
  specdeploy validate profiles/h200/h200-eagle3.yaml
  specdeploy plan h200-eagle3 --set speculative.draft_len=4
  specdeploy build cpu-smollm2 --tune
"""


def _turn_on(_ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        setattr(console(), "json_mode" if param.name == "json_mode" else "debug", True)


def _shared_options() -> list[click.Parameter]:
    return [
        click.Option(["--json", "json_mode"], is_flag=True, expose_value=False, callback=_turn_on,
                     help="Machine-readable output on stdout (one JSON document; on failure {\"error\": ...})."),
        click.Option(["--debug"], is_flag=True, expose_value=False, callback=_turn_on,
                     help="Show tracebacks for errors."),
    ]


class Command(click.Command):
    """A command that accepts the global options wherever the user puts them."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.params.extend(_shared_options())


class Group(click.Group):
    """A group whose commands and subgroups all carry the global options."""

    command_class = Command
    group_class = type  # subgroups are Groups too

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.params.extend(_shared_options())


@click.group(cls=Group, epilog=EPILOG,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="specdeploy")
def cli() -> None:
    """Plan, build, tune and serve LLMs with speculative decoding (TensorRT-LLM, Triton)."""


def complete_profile(_ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """Shell completion for a profile argument: shipped names, then files (`name` arguments: names only)."""
    from specdeploy.profile.shipped import shipped_profiles

    names = [CompletionItem(n) for n in shipped_profiles() if n.startswith(incomplete)]
    return names if param.name == "name" else [*names, CompletionItem(incomplete, type="file")]


def profile_argument(name: str = "profile", **kwargs: Any) -> Any:
    """A PROFILE argument (a file or a shipped name) that the shell completes (`_SPECDEPLOY_COMPLETE`)."""
    return click.argument(name, shell_complete=complete_profile, **kwargs)


set_option = click.option(
    "--set", "sets", multiple=True, metavar="KEY=VALUE",
    help="Override a profile value, e.g. --set speculative.draft_len=4 (typed; unknown keys are errors).")
