"""Table generation refuses what the fast path could not decide exactly, so a model cannot outgrow its table."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from specdeploy.profile import checks
from specdeploy.profile.schema import Section
from specdeploy.profile.table import model_table


class Forbid(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Checked(Forbid):
    n: Annotated[int | None, AfterValidator(checks.draft_len)] = Field(None, ge=1, le=8)
    m: dict[int, float] = Field(default_factory=dict)
    s: str


def test_a_supported_model_becomes_a_table() -> None:
    assert model_table(Checked) == {
        "type": "object", "required": ["s"], "additionalProperties": False, "properties": {
            "n": {"anyOf": [{"type": "integer", "minimum": 1, "maximum": 8}, {"type": "null"}],
                  "check": "draft_len", "default": None},
            "m": {"type": "object", "additionalProperties": {"type": "number"}, "keys": "integer", "default": {}},
            "s": {"type": "string"}}}


class IntKeyedDefault(Forbid):  # JSON cannot hold the integer keys of this default
    m: dict[int, int] = Field(default_factory=lambda: {1: 2})


class FieldValidated(Forbid):
    n: int = 1

    @field_validator("n")
    @classmethod
    def _odd(cls, value: int) -> int:
        return value


class ModelValidated(Forbid):
    n: int = 1

    @model_validator(mode="after")
    def _whole(self) -> Any:
        return self


class Ignoring(BaseModel):  # pydantic's default extra="ignore" drops unknown keys
    n: int = 1


class Stripping(Forbid):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)
    s: str = "x"


class Before(Forbid):
    n: Annotated[int, BeforeValidator(int)] = 1


class Nested(Forbid):
    n: list[Annotated[int, AfterValidator(checks.draft_len)]] = []


class ForeignCheck(Forbid):
    n: Annotated[int, AfterValidator(abs)] = 1


class Aliased(Forbid):
    n: int = Field(1, alias="N")


class Overriding(Section):  # the one validator a section may have, but redefined
    n: int = 1

    @field_validator("*", mode="before")
    @classmethod
    def _no_yaml_booleans(cls, value: Any) -> Any:
        return int(value)


def test_a_section_with_the_shared_validator_is_supported() -> None:
    class Plain(Section):
        n: int = 1

    assert model_table(Plain)["properties"] == {"n": {"type": "integer", "default": 1}}


@pytest.mark.parametrize("model", [FieldValidated, ModelValidated, Ignoring, Stripping, Before, Nested, ForeignCheck,
                                   Aliased, IntKeyedDefault, Overriding])
def test_what_the_fast_path_cannot_decide_is_refused(model: type[BaseModel]) -> None:
    with pytest.raises(NotImplementedError, match="outside what the fast path decides"):
        model_table(model)
