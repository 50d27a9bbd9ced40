"""The Triton layout interface: one model-repository shape an engine is served in behind Triton.

An engine names its layouts in `Engine.layouts` (cheap: `validate` reads the names) and hands out each one's
`TritonLayout` from `Engine.triton_layout(name)`, which imports the layout's module only then. The core reaches a
layout as `registry.layout_named(name)` and calls what is below; it never compares layout names. What stays in the
core is what every layout shares: the one strict jinja environment (`render.env`), the writer, the manifest, and the
checks against Triton's own schema and load rules (`render.check`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from specdeploy.render.check_pbtxt import Model, RepoIssue
    from specdeploy.render.model import RenderInputs, RepoContext


class TritonLayout:
    """Base class of layouts. Subclasses set the class variables and override `context`, and the other hooks where
    the layout has something to say."""

    name: ClassVar[str]
    templates: ClassVar[str] = ""
    """Its folder under specdeploy's `templates/` (`triton/<name>` when empty): one folder per model folder of the
    repository, `*.j2` rendered with the context bound as `c`, other files copied."""
    needs_llm_args: ClassVar[bool] = False
    """`context` needs the build's serving arguments (`Engine.serving_args`, the LLM() dict)."""
    portable: ClassVar[bool] = False
    """The repository names no build-machine path, so `deploy.targets` can ship it to another host."""
    serve_note: ClassVar[str] = ""
    """What `specdeploy serve`'s local tritonserver (python backend only) says before loading it; empty: nothing."""
    templated_chat: ClassVar[bool] = False
    """Its entry model takes the chat prompt the OpenAI frontend templated as its text (else only where the model
    has a `chat_template` input; serve/openai_chat.py)."""

    @property
    def template_folder(self) -> str:
        return self.templates or f"triton/{self.name}"

    def context(self, resolved: Any, inputs: RenderInputs, llm_args: dict[str, Any] | None) -> RepoContext:
        """The typed context the templates print (`render.model.RepoContext`); every value is decided here."""
        raise NotImplementedError(f"the {self.name} layout builds no context")

    def check(self, root: Path, models: dict[str, Model], manifest: dict[str, Any]) -> list[RepoIssue]:
        """What this layout's backends need beyond Triton's own rules, for `check-repo`. Every installed layout's
        checks run on every repository (a hand-written one has no manifest naming its layout), so each rule picks
        the models it concerns by what they are (backend, files), never by the manifest's layout."""
        return []

    def tokenizer(self, root: Path, model: str, config_of: Callable[[str], dict[str, Any]]) -> tuple[Any, Any] | None:
        """(where the served `model`'s tokenizer is, its revision) as the repository at `root` says it, for the
        OpenAI frontend's chat template; `config_of(name)` is a served model's Triton config (JSON). None: it does
        not say. Errors are taken as "not found"."""
        return None


def string_parameter(config: dict[str, Any], key: str) -> Any:
    """A `parameters` entry's string_value of a Triton model config in JSON (what `config_of` returns)."""
    value = config.get("parameters", {}).get(key, {})
    return value.get("string_value") if isinstance(value, dict) else None
