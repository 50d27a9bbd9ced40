"""The root click group, the table of its commands and the options every command shares.

The root group is lazy: a command's module is imported only when that command is asked for (`--help` lists the
table's summaries), so a command module imports what it needs at module level and `validate` never pays for
`serve`.

`--json` and `--debug` work before the command (`specdeploy --json plan X`) and after it (`specdeploy plan X
--json`): every command and group carries them.
"""

from __future__ import annotations

import inspect
from importlib import import_module
from typing import Any

import click
from click.shell_completion import CompletionItem

from specdeploy import __version__
from specdeploy.console import console
from specdeploy.profile.shipped import shipped_profiles

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
        click.Option(
            ["--json", "json_mode"],
            is_flag=True,
            expose_value=False,
            callback=_turn_on,
            help='Machine-readable output on stdout (one JSON document; on failure {"error": ...}).',
        ),
        click.Option(
            ["--debug"], is_flag=True, expose_value=False, callback=_turn_on, help="Show tracebacks for errors."
        ),
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


COMMANDS: dict[str, tuple[str, str]] = {
    "validate": ("core", "Check PROFILES (files or shipped names): schema, options and every cross-field rule."),
    "plan": ("core", "Print the resolved PROFILE (with the source of each value), the facts, the fit and the steps."),
    "profiles": ("core", "The profiles shipped with specdeploy."),
    "doctor": ("core", "Versions, NVIDIA driver and GPUs, TensorRT-LLM and tritonserver availability."),
    "mechanisms": ("core", "The drafter mechanisms installed, and where each runs (backend: TRT-LLM lines)."),
    "build": ("build", "Build PROFILE into OUT/<name>/: fetch, emit or compile, render; cached steps are reused."),
    "verify": (
        "build",
        "Check ARTIFACT_DIR against its manifest: a successful build, every file as recorded and "
        "none unlisted, a lock that matches; exit 1 on any drift or problem.",
    ),
    "tune": ("tune", "Measure and choose the draft length per concurrency; write the result, report and lock."),
    "render": (
        "render",
        "Render PROFILE's Triton model repository (or --target deploy files), check it, and swap it into place.",
    ),
    "check-deploy": (
        "render",
        "Check rendered deploy files offline: Kubernetes and LeaderWorkerSet schemas, shellcheck, the Dockerfile.",
    ),
    "check-repo": ("render", "Check the Triton model repository REPO against Triton's schema and load-time rules."),
    "serve": (
        "serve",
        "Start a local tritonserver for ARTIFACT_DIR's rendered repository (the models its manifest "
        "names) and an OpenAI-compatible endpoint in front of its entry model, or, for an engine that "
        "serves itself (vLLM), the engine's own OpenAI server; Ctrl-C, SIGTERM or SIGHUP stops it. A "
        "built artifact must pass `verify` first; the server runs a private copy of what passed "
        "(tritonserver takes no load or unload request; docs/serving.md). A folder already served is "
        "refused with where it is served. ENGINE_ARGS after `--` go to the engine's own server.",
    ),
    "ask": ("serve", "Send PROMPT to a served model and print its answer."),
    "generate": ("serve", "Answer PROMPT with PROFILE's reference runtime in this process (no server)."),
}
"""name -> (the module under specdeploy.cli that defines it, as its function of that name with `-` read as `_`;
its summary). `--help` lists the summaries without importing a command module; a command's own help is its
summary, then its docstring."""


class LazyGroup(Group):
    """The root group: its commands come from `COMMANDS`, each module imported when one of its commands runs (or
    shows its help, or completes)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module, summary = COMMANDS[name]
        command: click.Command = getattr(import_module(f"specdeploy.cli.{module}"), name.replace("-", "_"))
        if command.short_help is None:  # the first time it is asked for
            command.short_help = summary
            command.help = summary + (f"\n\n{inspect.cleandoc(command.help)}" if command.help else "")
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The table's summaries, shortened as click shortens a command's."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in names)
        with formatter.section("Commands"):
            formatter.write_dl(
                [(name, click.Command(name, help=COMMANDS[name][1]).get_short_help_str(limit)) for name in names]
            )


def command(name: str | None = None) -> Any:
    """Declare a command of `COMMANDS`."""
    return click.command(name, cls=Command)


def group() -> Any:
    """Declare a command group of `COMMANDS` (its subcommands carry the global options too)."""
    return click.group(cls=Group)


@click.group(
    cls=LazyGroup, epilog=EPILOG, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100}
)
@click.version_option(__version__, prog_name="specdeploy")
def cli() -> None:
    """Plan, build, tune and serve LLMs with speculative decoding (TensorRT-LLM, Triton)."""


def complete_profile(_ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """Shell completion for a profile argument: shipped names, then files (`name` arguments: names only)."""
    names = [CompletionItem(n) for n in shipped_profiles() if n.startswith(incomplete)]
    return names if param.name == "name" else [*names, CompletionItem(incomplete, type="file")]


def profile_argument(name: str = "profile", **kwargs: Any) -> Any:
    """A PROFILE argument (a file or a shipped name) that the shell completes (`_SPECDEPLOY_COMPLETE`)."""
    return click.argument(name, shell_complete=complete_profile, **kwargs)


set_option = click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a profile value, e.g. --set speculative.draft_len=4 (typed; unknown keys are errors).",
)
