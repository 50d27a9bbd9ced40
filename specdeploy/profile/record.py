"""Record: the fast path's read-only stand-in for a validated pydantic model (same attributes, same dump)."""

from __future__ import annotations

from typing import Any, Literal


class Record:
    """A validated profile section or options value: attribute access and `model_dump` like the model's.

    Lists and dicts inside are plain (as in the models); only the attributes themselves are read-only.
    """

    __slots__ = ("_fields",)

    def __init__(self, fields: dict[str, Any]) -> None:
        object.__setattr__(self, "_fields", fields)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # copy/pickle probe dunders before _fields exists
            raise AttributeError(name)
        try:
            return self._fields[name]
        except KeyError:
            raise AttributeError(f"{type(self).__name__} has no field '{name}'") from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Record) and self._fields == other._fields

    __hash__ = None  # type: ignore[assignment]  # equal by value, and its lists are mutable

    def __reduce__(self) -> tuple[type[Record], tuple[dict[str, Any]]]:
        """Copied and pickled (a Ray task's arguments) through its constructor: its attributes are read-only."""
        return Record, (self._fields,)

    def __repr__(self) -> str:
        return f"Record({', '.join(f'{k}={v!r}' for k, v in self._fields.items())})"

    def model_dump(self, *, mode: Literal["python", "json"] = "python", exclude_none: bool = False) -> dict[str, Any]:
        """As pydantic dumps: `exclude_none` drops None fields of records (not inside dicts), json mode
        writes map keys as strings."""
        return {name: _dump(value, mode, exclude_none) for name, value in self._fields.items()
                if not (exclude_none and value is None)}


def _dump(value: Any, mode: Literal["python", "json"], exclude_none: bool) -> Any:
    if isinstance(value, Record):
        return value.model_dump(mode=mode, exclude_none=exclude_none)
    if isinstance(value, dict):
        return {(str(k) if mode == "json" else k): _dump(v, mode, False) for k, v in value.items()}
    if isinstance(value, list):
        return [_dump(v, mode, False) for v in value]
    return value
