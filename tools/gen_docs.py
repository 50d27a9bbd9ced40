"""Regenerate the checked-in profile JSON Schema, Markdown reference and fast-path tables (`make schema`)."""

from __future__ import annotations

from pathlib import Path

from specdeploy.profile.reference import json_schema, markdown_reference
from specdeploy.profile.table import table_files

ROOT = Path(__file__).resolve().parent.parent

if __name__ == "__main__":
    (ROOT / "specdeploy" / "schemas").mkdir(exist_ok=True)
    (ROOT / "specdeploy" / "schemas" / "profile.v1.json").write_text(json_schema())
    (ROOT / "docs" / "profile-reference.md").write_text(markdown_reference())
    for path, text in table_files().items():
        if Path(path).is_relative_to(ROOT):  # an installed third-party plugin's file is its own
            Path(path).write_text(text)
            print(f"wrote {Path(path).relative_to(ROOT)}")
    print("wrote specdeploy/schemas/profile.v1.json and docs/profile-reference.md")
