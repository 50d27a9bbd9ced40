"""The profile's JSON Schema and Markdown reference, generated from the pydantic models.

Both are checked in (`specdeploy/schemas/profile.v1.json`, `docs/profile-reference.md`) and a test
fails when they drift from the models; `make schema` regenerates them.
"""

from __future__ import annotations

import json
from typing import Any, get_args

from pydantic import BaseModel

from specdeploy.profile.schema import Profile

SCHEMA_ID = "https://specdeploy.dev/schemas/profile.v1.json"


def json_schema() -> str:
    schema: dict[str, Any] = {"$id": SCHEMA_ID, **Profile.model_json_schema()}
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def _type_text(info: Any) -> str:
    text = str(info.annotation).replace("typing.", "").replace("<class '", "").replace("'>", "")
    text = text.replace("specdeploy.profile.schema.", "")
    return text.replace("Annotated[bool, Strict(strict=True)]", "bool").replace(
        "Annotated[str, Strict(strict=True)]", "str"
    )


def _section(name: str, model: type[BaseModel], lines: list[str]) -> None:
    lines += [
        f"## `{name}`",
        "",
        (model.__doc__ or "").strip().split("\n")[0],
        "",
        "| key | type | default | meaning |",
        "|---|---|---|---|",
    ]
    for field, info in model.model_fields.items():
        default = "required" if info.is_required() else ("computed" if info.default_factory else repr(info.default))
        lines.append(f"| `{field}` | `{_type_text(info)}` | {default} | {info.description or ''} |")
    lines.append("")


def _sections(prefix: str, model: type[BaseModel], lines: list[str]) -> None:
    """A section per nested model (`hardware`, then `hardware.gpu_spec`), depth first."""
    for field, info in model.model_fields.items():
        nested = [
            a for a in (info.annotation, *get_args(info.annotation)) if isinstance(a, type) and issubclass(a, BaseModel)
        ]
        if nested:
            _section(f"{prefix}{field}", nested[0], lines)
            _sections(f"{prefix}{field}.", nested[0], lines)


def markdown_reference() -> str:
    from specdeploy.plugin.registry import registry

    lines = [
        "# Profile reference",
        "",
        "Generated from the schema by `make schema`; a test fails when it drifts.",
        "",
        "Top-level keys: " + ", ".join(f"`{k}`" for k in Profile.model_fields) + ", and `extends` (a file or a "
        "shipped profile name whose values this profile overrides: mappings merge, other values replace (a "
        "`speculative.schedule` is one value), `key: null` "
        "drops an inherited value back to its default, at any depth, except where null is itself a value "
        "(`deploy.kubernetes.hf_token_secret: null` is no token); chains allowed, cycles are errors).",
        "",
    ]
    _sections("", Profile, lines)
    lines += ["## `speculative.options` per mechanism", ""]
    for name, cls in sorted(registry().items()):
        fields = cls.Options.model_fields
        lines.append(f"### `{name}` — {cls.summary}")
        lines.append("")
        if not fields:
            lines += ["No options.", ""]
            continue
        lines += ["| option | type | default | meaning |", "|---|---|---|---|"]
        lines += [f"| `{f}` | `{_type_text(i)}` | {i.default!r} | {i.description or ''} |" for f, i in fields.items()]
        lines.append("")
    return "\n".join(lines)
