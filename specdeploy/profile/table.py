"""The fast path's tables, generated from the pydantic models by `make schema` (a test fails when they drift).

A table is the model's JSON Schema cut down to what `specdeploy.profile.fast` implements (type, enum,
const, properties, required, additionalProperties, items, anyOf, minimum/maximum/exclusive*), plus three
words of its own: `default` on every optional property (factory defaults too), `check` naming a function of
`specdeploy.profile.checks`, and `keys: integer` on maps with integer keys. Generation refuses anything the
fast path could not decide exactly (another validator, a serializer, a coercing config, an unknown type or
keyword), so the models cannot quietly grow past their tables.
"""

from __future__ import annotations

import json
import types
import typing
from typing import Any

import annotated_types
from pydantic import AfterValidator, BaseModel
from pydantic.types import Strict
from pydantic_core import to_jsonable_python

from specdeploy.profile.checks import CHECKS

KEYWORDS = {"type", "enum", "const", "properties", "required", "additionalProperties", "items", "anyOf",
            "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}
PROSE = {"title", "description", "default"}
CONFIG = {"extra", "validate_default", "allow_inf_nan"}
"""model_config keys the tables agree with: the fast path never takes a NaN or infinity (pydantic decides it)."""
ATOMS = (int, float, str, bool, type(None), typing.Any)
CONSTRAINTS = (annotated_types.Ge, annotated_types.Gt, annotated_types.Le, annotated_types.Lt, Strict)


def table_files() -> dict[str, str]:
    """path -> text of each generated table file: the profile's, and every one an installed mechanism names."""
    from specdeploy.fast_tables import PROFILE_TABLES
    from specdeploy.plugin.base import options_ref
    from specdeploy.plugin.registry import registry
    from specdeploy.profile.schema import Profile

    files: dict[str, list[type[BaseModel]]] = {str(PROFILE_TABLES): [Profile]}
    for cls in registry().values():
        ref = options_ref(cls)
        if ref is not None and cls.Options not in files.setdefault(ref[0], []):
            files[ref[0]].append(cls.Options)
    return {path: tables_json(models) for path, models in files.items()}


def tables_json(models: list[type[BaseModel]]) -> str:
    """`{model name: table}` as a checked-in file's text (a plugin ships its own with `lazy_options`)."""
    tables = {m.__name__: model_table(m) for m in sorted(models, key=lambda m: m.__name__)}
    return json.dumps(tables, indent=1) + "\n"


def model_table(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    return _model(model, schema, schema.get("$defs", {}))


def _refuse(where: str, what: str) -> NotImplementedError:
    return NotImplementedError(f"{where}: {what} is outside what the fast path decides (specdeploy.profile.table); "
                               "express it with types, bounds and an AfterValidator of specdeploy.profile.checks")


def _model(model: type[BaseModel], node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    from specdeploy.profile.fast import UNDECIDED, conform
    from specdeploy.profile.schema import Section

    decorators = model.__pydantic_decorators__
    own = decorators.field_validators.get("_no_yaml_booleans")
    inherited = own is not None and getattr(own.func, "__func__", None) is _no_yaml_booleans(Section)
    allowed = {"_no_yaml_booleans"} if inherited else set()  # what the fast path's exact bool typing does
    others = [*decorators.validators, *decorators.root_validators, *decorators.field_serializers,
              *decorators.model_serializers, *decorators.model_validators, *decorators.computed_fields]
    if set(decorators.field_validators) - allowed or others:
        raise _refuse(model.__name__, f"validator or serializer {sorted({*decorators.field_validators, *others})}")
    if model.model_config.get("extra") != "forbid" or set(model.model_config) - CONFIG:
        raise _refuse(model.__name__, f"model_config {dict(model.model_config)} (extra='forbid', validate_default "
                      "and allow_inf_nan only)")
    properties: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        where = f"{model.__name__}.{name}"
        if info.alias or info.validation_alias:
            raise _refuse(where, "an alias")
        _check_annotation(where, info.annotation)
        prop = _node(where, _deref(node["properties"][name], defs), defs, info.annotation)
        funcs = [m.func for m in info.metadata if isinstance(m, AfterValidator)]
        if any(not isinstance(m, (*CONSTRAINTS, AfterValidator)) for m in info.metadata) or len(funcs) > 1 or \
                any(CHECKS.get(getattr(f, "__name__", "")) is not f for f in funcs):
            raise _refuse(where, f"field metadata {info.metadata}")
        if funcs:
            prop["check"] = funcs[0].__name__
        if not info.is_required():
            prop["default"] = to_jsonable_python(info.get_default(call_default_factory=True))
            if conform(prop, prop["default"]) is UNDECIDED:
                raise _refuse(where, f"the default {prop['default']!r} (it does not pass its own table)")
        properties[name] = prop
    required = [n for n, i in model.model_fields.items() if i.is_required()]
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def _no_yaml_booleans(section: type[BaseModel]) -> Any:
    return getattr(section.__pydantic_decorators__.field_validators["_no_yaml_booleans"].func, "__func__", None)


def _check_annotation(where: str, annotation: Any) -> None:
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        if any(not isinstance(m, CONSTRAINTS) for m in annotation.__metadata__):
            raise _refuse(where, f"nested metadata {annotation.__metadata__}")
        _check_annotation(where, args[0])
    elif origin is typing.Literal:
        if any(type(a) not in (int, str, bool) for a in args):
            raise _refuse(where, f"literal {annotation}")
    elif origin in (list, dict, typing.Union, types.UnionType):
        for arg in args:
            _check_annotation(where, arg)
    elif not (annotation in ATOMS or (isinstance(annotation, type) and issubclass(annotation, BaseModel))):
        raise _refuse(where, f"the type {annotation}")


def _deref(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in node:
        return {**defs[node["$ref"].rsplit("/", 1)[1]], "$model": True}
    return node


def _node(where: str, node: dict[str, Any], defs: dict[str, Any], annotation: Any) -> dict[str, Any]:
    """One schema node; `annotation` (the field's) tells nested models and map keys, so those must sit at the
    field (directly or in a union with null): deeper they are refused."""
    if node.pop("$model", False):
        return _model(_only(where, annotation, BaseModel), node, defs)
    unknown = set(node) - KEYWORDS - PROSE
    if unknown:
        raise _refuse(where, f"JSON Schema keywords {sorted(unknown)}")
    out = {k: v for k, v in node.items() if k in KEYWORDS}
    if "anyOf" in out:
        out["anyOf"] = [_node(where, _deref(b, defs), defs, annotation) for b in out["anyOf"]]
    if "items" in out:
        out["items"] = _node(where, _deref(out["items"], defs), defs, None)
    if out.get("type") == "object":
        if "properties" in out or not isinstance(out.get("additionalProperties", True), (bool, dict)):
            raise _refuse(where, "an inline object")
        values = out.get("additionalProperties", True)
        out["additionalProperties"] = values if values is True else _node(where, _deref(values, defs), defs, None)
        key = typing.get_args(_only(where, annotation, dict))[0]
        if key is int:
            out["keys"] = "integer"
        elif key is not str:
            raise _refuse(where, f"map keys of type {key}")
    return out


def _only(where: str, annotation: Any, kind: type) -> Any:
    """The one member of `annotation` (a union with None at most) that is a `kind` (a model, or a dict type)."""
    members = typing.get_args(annotation) if typing.get_origin(annotation) in (typing.Union, types.UnionType) \
        else (annotation,)
    found = [m for m in members if (typing.get_origin(m) or m) is kind or
             (kind is BaseModel and isinstance(m, type) and issubclass(m, BaseModel))]
    if len(found) != 1:
        raise _refuse(where, f"a {kind.__name__} nested below the field ({annotation})")
    return found[0]
