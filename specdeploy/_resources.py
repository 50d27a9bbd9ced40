"""Where the packaged data lives: `templates/` and `profiles/` ship inside the wheel as `specdeploy/_data/`.

An editable install from a checkout has no `_data`; the checkout's top-level folders are used then.
"""

from __future__ import annotations

from pathlib import Path


def data_dir(kind: str) -> Path:
    """The folder of packaged `templates` or `profiles`."""
    packaged = Path(__file__).resolve().parent / "_data" / kind  # importlib.resources costs validate ~5 ms
    if packaged.is_dir():
        return packaged
    checkout = Path(__file__).resolve().parent.parent / kind  # editable install: the checkout's own folder
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(f"specdeploy's {kind}/ folder is missing from this installation")
