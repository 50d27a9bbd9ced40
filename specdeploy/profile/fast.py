"""The fast path: decide a well-formed profile from generated tables, without importing pydantic.

Every command runs it first (pydantic's import and model construction alone cost more than the latency budget
of `validate` and `plan`). It is conservative: it accepts only data that already has exactly the type each
slot wants (an int where an int goes, never `"64"`, `64.0` or a YAML boolean), and answers UNDECIDED for
anything else: an error, a coercion, a key or type it does not know. The pydantic models then decide, and
word the errors. Its only coercion is pydantic's own int -> float in a number slot. The tables are generated
from the models (`specdeploy.profile.table`, `make schema`); a differential test holds the two paths equal.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, Protocol

from specdeploy.fast_tables import PROFILE_TABLES, load_tables
from specdeploy.profile.checks import CHECKS
from specdeploy.profile.record import Record

INT_LIMIT = 2**63
FLOAT_EXACT = 2**53


class _Undecided:
    def __repr__(self) -> str:
        return "UNDECIDED"


UNDECIDED: Any = _Undecided()
"""The fast path cannot tell: the pydantic path decides."""


class Tabled(Protocol):
    """A mechanism, as far as the fast path needs one (`specdeploy.plugin.base.Mechanism` is one)."""

    def options_table(self) -> dict[str, Any] | None: ...


def fast_profile(data: dict[str, Any], mechanism: Tabled | None) -> tuple[Record, Record | None] | None:
    """(profile, options) exactly as the models would validate them, or None when undecided."""
    table = load_tables(str(PROFILE_TABLES))["Profile"]
    options_table = mechanism.options_table() if mechanism is not None else None
    if mechanism is not None and options_table is None:
        return None  # a plugin without a shipped table: its pydantic model decides
    try:
        profile = conform(table, data)
        if profile is UNDECIDED:
            return None
        options = conform(options_table, profile.speculative.options) if options_table is not None else None
    except RecursionError:  # YAML aliases can build cycles
        return None
    return None if options is UNDECIDED else (profile, options)


def conform(schema: dict[str, Any], value: Any) -> Any:
    """`value` as the model would hold it (a Record for an object with properties), or UNDECIDED."""
    result = _shape(schema, value)
    check = schema.get("check")
    if check is None or result is UNDECIDED:
        return result
    try:
        return CHECKS[check](result)
    except ValueError:
        return UNDECIDED


def _shape(schema: dict[str, Any], value: Any) -> Any:
    if "anyOf" in schema:
        found = [r for r in (conform(branch, value) for branch in schema["anyOf"]) if r is not UNDECIDED]
        return found[0] if len(found) == 1 else UNDECIDED  # two matches would leave pydantic a choice
    if "const" in schema:
        return value if _same(value, schema["const"]) else UNDECIDED
    if "enum" in schema:
        return value if any(_same(value, e) for e in schema["enum"]) else UNDECIDED
    kind = schema.get("type")
    if kind is None:
        return _plain(value)
    if kind == "object":
        return _object(schema, value) if type(value) is dict else UNDECIDED
    if kind == "array":
        if type(value) is not list:
            return UNDECIDED
        items = [conform(schema["items"], v) for v in value]
        return UNDECIDED if _undecided(items) else items
    if kind == "number" and type(value) is int and abs(value) < FLOAT_EXACT:
        value = float(value)
    exact = {"integer": int, "number": float, "string": str, "boolean": bool, "null": type(None)}.get(kind)
    if type(value) is not exact or not _plain_scalar(value) or not _within(schema, value):
        return UNDECIDED
    return value


def _object(schema: dict[str, Any], value: dict[Any, Any]) -> Any:
    properties = schema.get("properties")
    if properties is None:  # a map: dict[str, X] or dict[int, X]
        keys = int if schema.get("keys") == "integer" else str
        values = schema["additionalProperties"]
        out = {k: (_plain(v) if values is True else conform(values, v)) for k, v in value.items()}
        if any(type(k) is not keys or not _plain_scalar(k) for k in out) or _undecided(out.values()):
            return UNDECIDED
        return out
    if any(type(k) is not str or k not in properties for k in value):
        return UNDECIDED
    if any(name not in value for name in schema["required"]):
        return UNDECIDED
    fields = {}
    for name, prop in properties.items():
        fields[name] = conform(prop, value[name] if name in value else prop["default"])
        if fields[name] is UNDECIDED:
            return UNDECIDED
    return Record(fields)


def _plain(value: Any) -> Any:
    """A copy of a plain JSON value (an `Any` slot), or UNDECIDED for anything pydantic would convert."""
    if type(value) is list:
        items = [_plain(v) for v in value]
        return UNDECIDED if _undecided(items) else items
    if type(value) is dict:
        out = {k: _plain(v) for k, v in value.items()}
        return out if all(type(k) is str for k in out) and not _undecided(out.values()) else UNDECIDED
    if type(value) in (str, bool, int, float, type(None)) and _plain_scalar(value):
        return value
    return UNDECIDED


def _undecided(values: Iterable[Any]) -> bool:
    return any(v is UNDECIDED for v in values)


def _plain_scalar(value: Any) -> bool:
    if type(value) is int:
        return -INT_LIMIT < value < INT_LIMIT
    if type(value) is float:
        return math.isfinite(value)
    return True


def _same(value: Any, expected: Any) -> bool:
    return type(value) is type(expected) and value == expected


def _within(schema: dict[str, Any], value: Any) -> bool:
    return not (
        ("minimum" in schema and not value >= schema["minimum"])
        or ("maximum" in schema and not value <= schema["maximum"])
        or ("exclusiveMinimum" in schema and not value > schema["exclusiveMinimum"])
        or ("exclusiveMaximum" in schema and not value < schema["exclusiveMaximum"])
    )
