"""serve, ask, generate."""

from __future__ import annotations

from pathlib import Path

import click

from specdeploy import api
from specdeploy.cli._group import command, profile_argument, set_option
from specdeploy.console import console


@command()
@click.argument("artifact_dir", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option(
    "--openai-port",
    type=click.IntRange(0, 65535),
    default=8000,
    show_default=True,
    help="Port of the OpenAI-compatible endpoint (/v1/models, /v1/chat/completions, /v1/completions) "
    "on 127.0.0.1; 0: any free port.",
)
@click.option("--no-openai", is_flag=True, help="Serve Triton's own endpoints only.")
@click.argument("engine_args", nargs=-1, metavar="[-- ENGINE_ARGS...]")
def serve(artifact_dir: Path, openai_port: int, no_openai: bool, engine_args: tuple[str, ...]) -> None:
    api.serve(
        artifact_dir, report=console().info, openai_port=None if no_openai else openai_port, engine_args=engine_args
    )


@command()
@click.argument("prompt")
@click.option(
    "--artifact",
    type=click.Path(path_type=Path),
    default=None,
    help="Artifact folder a `specdeploy serve` is serving (default: the current folder).",
)
@click.option("--url", default=None, metavar="HOST:PORT", help="gRPC endpoint instead of a served artifact.")
@click.option("--model", default=None, help="Model name (default: the served repository's entry model).")
@click.option("--max-tokens", type=click.IntRange(1, 65536), default=64, show_default=True)
@click.option(
    "--draft-len",
    type=click.IntRange(0),
    default=None,
    help="This request's draft length instead of the served one (0: no speculation; reference layout, "
    "which refuses more than its runtime drafts).",
)
def ask(
    prompt: str, artifact: Path | None, url: str | None, model: str | None, max_tokens: int, draft_len: int | None
) -> None:
    answer = api.ask(prompt, artifact=artifact, url=url, model=model, max_tokens=max_tokens, draft_len=draft_len)
    fields = {"model": answer.model, **answer.outputs}
    console().data(answer.to_dict(), text=str(fields.get("text_output", fields)))


@command()
@profile_argument()
@click.argument("prompt")
@set_option
@click.option(
    "--artifact",
    type=click.Path(path_type=Path),
    default=None,
    help="A build of PROFILE whose tuned draft length to use.",
)
@click.option("--max-tokens", type=click.IntRange(1, 65536), default=64, show_default=True)
def generate(profile: str, prompt: str, sets: tuple[str, ...], artifact: Path | None, max_tokens: int) -> None:
    answer = api.generate(profile, prompt, sets, artifact=artifact, max_tokens=max_tokens)
    stats = answer.stats
    console().info(
        f"{answer.mechanism} K={answer.draft_len}: {stats['tokens_per_s']:.1f} tokens/s, "
        f"acceptance {stats['acceptance_rate']:.2f}"
    )
    console().data(answer.to_dict(), text=answer.text)
