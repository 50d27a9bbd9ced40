"""The root click group and the options every command shares."""

from __future__ import annotations

import click

from specdeploy import __version__
from specdeploy.console import configure

EPILOG = """\b
Exit codes: 0 ok, 1 a step failed, 2 invalid profile or usage, 3 internal error.
Examples:
  specdeploy validate profiles/h200/h200-eagle3.yaml
  specdeploy plan h200-eagle3 --set speculative.draft_len=4
  specdeploy build cpu-smollm2 --tune
"""


@click.group(epilog=EPILOG, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="specdeploy")
@click.option("--json", "json_mode", is_flag=True, help="Machine-readable output on stdout.")
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
def cli(json_mode: bool, debug: bool) -> None:
    """Plan, build, tune and serve LLMs with speculative decoding (TensorRT-LLM, Triton)."""
    configure(json_mode=json_mode, debug=debug)


set_option = click.option(
    "--set", "sets", multiple=True, metavar="KEY=VALUE",
    help="Override a profile value, e.g. --set speculative.draft_len=4 (typed; unknown keys are errors).")
