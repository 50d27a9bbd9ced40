"""The checked-in JSON Schema and profile reference match the models; every field is documented."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from specdeploy.profile.reference import json_schema, markdown_reference
from specdeploy.profile.schema import Profile

ROOT = Path(__file__).resolve().parents[3]


def test_schema_file_matches_models() -> None:
    assert (ROOT / "specdeploy" / "schemas" / "profile.v1.json").read_text() == json_schema(), "run `make schema`"


def test_reference_doc_matches_models() -> None:
    assert (ROOT / "docs" / "profile-reference.md").read_text() == markdown_reference(), "run `make schema`"


def test_every_field_is_documented() -> None:
    def walk(model: type[BaseModel], prefix: str) -> None:
        for name, info in model.model_fields.items():
            assert info.description, f"{prefix}{name} has no description"
            if isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel):
                walk(info.annotation, f"{prefix}{name}.")

    walk(Profile, "")
