"""The one jinja environment every template is rendered with: strict, no autoescape, filters in one place."""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jinja2

_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def pbtxt_str(value: Any) -> str:
    """A protobuf text-format string literal (quoted, C-escaped) for any value; quotes/braces/newlines stay data."""
    text = "" if value is None else str(value)
    out = []
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\{ord(ch):03o}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def pbtxt_bool(value: Any) -> str:
    """`true`/`false` for a bool; anything else is a programming error in the context."""
    if not isinstance(value, bool):
        raise TypeError(f"expected a bool, got {value!r}")
    return "true" if value else "false"


def choices(paths: Iterable[Iterable[int]] | None) -> str:
    """Medusa/EAGLE choices in the backend's `csvStrToVecVecInt` form: `{0, 0, 0}, {0, 1}`."""
    if not paths:
        return ""
    return ", ".join("{" + ", ".join(str(int(i)) for i in path) + "}" for path in paths)


def to_yaml(value: Any) -> str:
    """Block-style YAML in the given key order; PyYAML quotes whatever would not read back the same."""
    import yaml

    return yaml.safe_dump(value, sort_keys=False, default_flow_style=False, allow_unicode=True, width=1000)


def to_json(value: Any) -> str:
    """A JSON document in the given key order (ASCII; NaN refused): what a backend `json.load`s."""
    return json.dumps(value, indent=2, ensure_ascii=True, allow_nan=False)


def yaml_str(value: Any) -> str:
    """A double-quoted YAML scalar (JSON's string syntax, which YAML reads the same): never a key, never a tag."""
    return json.dumps("" if value is None else str(value), ensure_ascii=True)


def sh(value: Any) -> str:
    """One shell word, quoted when it needs to be: `$`, quotes, `;` and newlines stay data."""
    return shlex.quote(str(value))


def line(value: Any) -> str:
    """A value printed bare into one line (a comment, a directive): a newline or control character is refused."""
    text = str(value)
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in text):
        raise ValueError(f"{text!r} contains a newline or control character")
    return text


FILTERS = {
    "pbtxt_str": pbtxt_str,
    "pbtxt_bool": pbtxt_bool,
    "choices": choices,
    "to_yaml": to_yaml,
    "to_json": to_json,
    "yaml_str": yaml_str,
    "sh": sh,
    "line": line,
}


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """StrictUndefined (a missing context field is an error, never an empty string), trailing newlines kept."""
    import jinja2

    from specdeploy._resources import data_dir

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(data_dir("templates"))),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(FILTERS)
    return env


def render_template(name: str, context: Any) -> str:
    """Render `templates/<name>` with the context object bound as `c`."""
    return environment().get_template(name).render(c=context)
