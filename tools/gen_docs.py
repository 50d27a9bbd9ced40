"""Regenerate the checked-in profile JSON Schema and Markdown reference (`make schema`)."""

from __future__ import annotations

from pathlib import Path

from specdeploy.profile.reference import json_schema, markdown_reference

ROOT = Path(__file__).resolve().parent.parent

if __name__ == "__main__":
    (ROOT / "specdeploy" / "schemas").mkdir(exist_ok=True)
    (ROOT / "specdeploy" / "schemas" / "profile.v1.json").write_text(json_schema())
    (ROOT / "docs" / "profile-reference.md").write_text(markdown_reference())
    print("wrote specdeploy/schemas/profile.v1.json and docs/profile-reference.md")
